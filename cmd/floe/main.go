package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// cliEnv is what commands write to; tests substitute buffers.
type cliEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
}

// errUsage marks a command-line mistake: exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cliEnv{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	os.Exit(run(ctx, env, os.Args[1:]))
}

// run runs a command line and returns the exit status: 0 done, 1 failed,
// 2 a usage mistake. The command tree is built per call, so nothing
// survives from one call to the next.
func run(ctx context.Context, env *cliEnv, args []string) int {
	root := newRootCmd(env)
	root.SetArgs(longFlagsWithOneDash(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(env.stderr, "%s: %v\n", cmd.CommandPath(), err)
	if errors.Is(err, errUsage) {
		fmt.Fprintf(env.stderr, "Usage: %s (`%s -h` for help)\n", cmd.UseLine(), cmd.CommandPath())
		return 2
	}
	return 1
}
