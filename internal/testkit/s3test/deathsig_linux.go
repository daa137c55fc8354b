package s3test

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the child when the thread that starts
// it ends, which the test process's death (a panic, a timeout, a kill)
// ends too.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
