//go:build !linux

package s3test

import "os/exec"

// dieWithParent does nothing here: without Linux's parent-death signal, a
// test process that dies before its TestMain closes the Server leaves the
// versitygw running.
func dieWithParent(*exec.Cmd) {}
