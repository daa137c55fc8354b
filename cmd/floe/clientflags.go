package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/floedb/floe/client"
)

const defaultServer = "127.0.0.1:7700"

// clientFlags are the flags every client command takes.
type clientFlags struct {
	servers string
	output  string
	timeout time.Duration
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	f := &clientFlags{}
	def := os.Getenv("FLOE_SERVER")
	if def == "" {
		def = defaultServer
	}
	fs.StringVar(&f.servers, "server", def, "comma-separated server addresses, tried in turn (env FLOE_SERVER)")
	fs.StringVar(&f.output, "output", "text", "output format: text or json")
	fs.DurationVar(&f.timeout, "timeout", 15*time.Second, "give up after this long (retries included)")
	return f
}

func (f *clientFlags) validate() error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("%w: --output must be text or json", errUsage)
	}
	if f.timeout <= 0 {
		return fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	return nil
}

// connect validates the flags and connects; the returned context carries the
// --timeout and must be cancelled.
func (f *clientFlags) connect(ctx context.Context) (*client.Client, context.Context, context.CancelFunc, error) {
	if err := f.validate(); err != nil {
		return nil, nil, nil, err
	}
	addrs, err := serverAddrs(f.servers)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	c, err := client.Connect(ctx, addrs...)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return c, ctx, cancel, nil
}

// serverAddrs splits --server into host:port addresses, refusing what
// cannot be one (a bare port, a URL) as a usage error before anything is
// dialed.
func serverAddrs(servers string) ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(servers, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if strings.Contains(a, "://") {
			return nil, fmt.Errorf("%w: --server %q: give host:port, without a scheme", errUsage, a)
		}
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("%w: --server %q is not host:port (for example 127.0.0.1:7700)", errUsage, a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: --server %q: port %q is not a number from 1 to 65535", errUsage, a, port)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: --server is empty", errUsage)
	}
	return addrs, nil
}

// printJSON writes v as one JSON document.
func printJSON(env *cliEnv, v any) error {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// clientCmd is a client command: flags, positional arguments, and a body
// that runs with a connected client.
type clientCmd struct {
	name  string // "db create"
	usage string // after "floe "
	// nargs is the number of positional arguments; with maxArgs > nargs,
	// between nargs and maxArgs.
	nargs, maxArgs int
	// flags registers the command's own flags.
	flags func(fs *flag.FlagSet)
	// prepare, when set, runs after parsing and before connecting: it may
	// take flag values from the positional arguments (returning the rest)
	// and adjust the client flags.
	prepare func(cf *clientFlags, pos []string) ([]string, error)
	// check, when set, validates the arguments and flags once their count
	// is right, before connecting: a usage mistake is found without
	// waiting for a server.
	check func(pos []string) error
	// streaming commands run until their work is done: --timeout bounds
	// connecting (and what the body bounds with cf.timeout), not the run.
	streaming bool
	run       func(ctx context.Context, c *client.Client, cf *clientFlags, args []string) error
}

// exec parses args, connects with the common client flags and runs the body.
func (cc clientCmd) exec(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlags(env, cc.name, cc.usage)
	cf := addClientFlags(fs)
	if cc.flags != nil {
		cc.flags(fs)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if cc.prepare != nil {
		if pos, err = cc.prepare(cf, pos); err != nil {
			return err
		}
	}
	if len(pos) < cc.nargs || len(pos) > max(cc.nargs, cc.maxArgs) {
		return fmt.Errorf("%w: usage: floe %s", errUsage, cc.usage)
	}
	if err := cf.validate(); err != nil {
		return err
	}
	if _, err := serverAddrs(cf.servers); err != nil {
		return err
	}
	if cc.check != nil {
		if err := cc.check(pos); err != nil {
			return err
		}
	}
	c, timed, cancel, err := cf.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	if !cc.streaming {
		ctx = timed
	}
	return cc.run(ctx, c, cf, pos)
}
