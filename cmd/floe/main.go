package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
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
// 2 a usage mistake, 3 a chaos run without a verdict. The command tree is built per call, so nothing
// survives from one call to the next.
func run(ctx context.Context, env *cliEnv, args []string) int {
	root := newRootCmd(env)
	root.SetArgs(longFlagsWithOneDash(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	msg := cliMessage(err)
	// "floe recover: recover: ..." says the command twice.
	msg = strings.TrimPrefix(msg, cmd.Name()+": ")
	fmt.Fprintf(env.stderr, "%s: %s\n", cmd.CommandPath(), msg)
	if errors.Is(err, errUsage) {
		fmt.Fprintf(env.stderr, "Usage: %s (`%s -h` for help)\n", cmd.UseLine(), cmd.CommandPath())
	}
	return exitStatus(err)
}

// exitStatus is the exit status of a command that failed with err.
func exitStatus(err error) int {
	switch {
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errNoVerdict):
		return 3
	}
	return 1
}

// goPrefix matches the Go package names the libraries put before their
// messages ("client: ", "record: "): words for a program's log, not for
// someone at a terminal.
var goPrefix = regexp.MustCompile(`(^|: |\n)(client|record|metastate|replica|replication|kvreplica|server|transport|raftmeta|logstore|kvstore|kverr|tableprop): `)

// cliMessage is err as the CLI prints it: without Go package prefixes and
// without a phrase repeated by the wrapping.
func cliMessage(err error) string {
	msg := err.Error()
	for {
		next := goPrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			break
		}
		msg = next
	}
	return dedupe(msg)
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
