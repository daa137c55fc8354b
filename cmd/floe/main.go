package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/floedb/floe/internal/pkgerr"
)

// cliEnv is what commands write to; tests substitute buffers.
type cliEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
}

// errUsage marks a command-line mistake: exit status 2.
var errUsage = errors.New("usage")

// usageError makes an error a usage mistake without saying "usage" in the
// middle of its message (line 3: usage: ...).
type usageError struct{ err error }

func (e usageError) Error() string   { return e.err.Error() }
func (e usageError) Unwrap() []error { return []error{errUsage, e.err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cliEnv{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	os.Exit(run(ctx, env, os.Args[1:]))
}

// run runs a command line and returns the exit status: 0 done, 1 failed,
// 2 a usage mistake, 3 a chaos run without a verdict. The command tree is built per call, so nothing
// survives from one call to the next.
func run(ctx context.Context, env *cliEnv, args []string) int {
	root := newRootCmd(env)
	args = longFlagsWithOneDash(root, args)
	if err := commandFlagWithoutCommand(root, args); err != nil {
		return reportError(env, root, err)
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	return reportError(env, cmd, err)
}

// cliMessage is err as the CLI prints it: the libraries' errors without
// the Go package names that open their texts for logs ("client: "), and
// without a phrase repeated by the wrapping.
func cliMessage(err error) string {
	return dedupe(pkgerr.Message(err))
}

// dedupe drops a ": "-separated phrase that repeats the one before it.
func dedupe(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, line := range lines {
		parts := strings.Split(line, ": ")
		out := parts[:0]
		for _, p := range parts {
			if len(out) > 0 && out[len(out)-1] == p {
				continue
			}
			out = append(out, p)
		}
		lines[i] = strings.Join(out, ": ")
	}
	return strings.Join(lines, "\n")
}
