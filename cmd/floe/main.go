package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: `floe <name> ...`.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

// cliEnv is what commands write to; tests substitute buffers.
type cliEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
}

// errUsage marks a command-line mistake: exit status 2.
var errUsage = errors.New("usage")

func commands() []command {
	return []command{
		{"dev", "run a one-node cluster for trying Floe out", runDev},
		{"serve", "run a node: metadata voter (meta), tablet node, or both", runServe},
		{"db", "create, list and drop databases", runDB},
		{"table", "create, list, describe and drop tables", runTable},
		{"cluster", "cluster status and metadata group membership", runCluster},
		{"recover", "make the surviving voters the whole metadata group of a stopped node (after a lost quorum)", runRecover},
		{"produce", "append JSON lines to a log table, or upsert or delete them in a primary-key table", runProduce},
		{"consume", "print a table's rows (a primary-key table's changelog) as JSON lines", runConsume},
		{"lookup", "read rows of a primary-key table by key or bucket-key prefix", runLookup},
		{"bench", "measure throughput and latency (produce, e2e, upsert, lookup)", runBench},
		{"log", "inspect and verify log folders on disk (dump, verify)", runLog},
		{"schema", "parse and check a table schema", runSchema},
		{"version", "print the version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cliEnv{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	os.Exit(run(ctx, env, os.Args[1:]))
}

// run dispatches a command line and returns the exit status.
func run(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, env, args[1:])
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				fmt.Fprintf(env.stderr, "floe %s: %v\n", c.name, err)
				return 2
			default:
				fmt.Fprintf(env.stderr, "floe %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(env.stderr, "floe: unknown command %q\n\n", args[0])
	usage(env.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Floe: a streaming storage cluster.")
	fmt.Fprintln(w, "\nUsage: floe <command> [arguments]\n\nCommands:")
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `floe <command> -h` for a command's flags.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(env *cliEnv, name, usageLine string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "Usage: floe %s\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, allowing flags after positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
