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
	"github.com/spf13/pflag"
)

const defaultServer = "127.0.0.1:7700"

// clientFlags are the flags every client command takes.
type clientFlags struct {
	servers string
	output  string
	timeout time.Duration

	// Security: TLS files and a user signing in with a password.
	tlsCA, tlsCert, tlsKey string
	user, passwordFile     string
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	f := &clientFlags{}
	fs.StringVar(&f.servers, "server", defaultServer, withEnv("server", "comma-separated server addresses, tried in turn"))
	choiceVar(fs, &f.output, "output", "text", outputFormats, withEnv("output", "output format: text or json"))
	fs.DurationVar(&f.timeout, "timeout", 15*time.Second, withEnv("timeout", "give up after this long (retries included)"))
	fs.StringVar(&f.tlsCA, "tls-ca", "", withEnv("tls-ca", "the cluster's CA certificate: connect with TLS"))
	fs.StringVar(&f.tlsCert, "tls-cert", "", withEnv("tls-cert", "client certificate, to sign in with it (with --tls-key)"))
	fs.StringVar(&f.tlsKey, "tls-key", "", withEnv("tls-key", "the client certificate's key"))
	fs.StringVar(&f.user, "user", "", withEnv("user", "user name, to sign in with a password (from "+passwordEnv+", --password-file or a prompt)"))
	fs.StringVar(&f.passwordFile, "password-file", "", withEnv("password-file", "file whose first line is the password of --user"))
	return f
}

// envName is the environment variable of client flag --name:
// --server-list reads FLOE_SERVER_LIST.
func envName(flagName string) string {
	return "FLOE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func withEnv(flagName, usage string) string {
	return fmt.Sprintf("%s (env %s)", usage, envName(flagName))
}

// clientFlagNames are the flags addClientFlags defines.
func clientFlagNames() []string {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	addClientFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// clientFlagUsages is the help text of the client flags.
func clientFlagUsages() string {
	gofs := flag.NewFlagSet("client", flag.ContinueOnError)
	addClientFlags(gofs)
	fs := pflag.NewFlagSet("client", pflag.ContinueOnError)
	addGoFlags(fs, gofs)
	return fs.FlagUsages()
}

// applyClientEnv sets each client flag not given on the command line from
// its environment variable, when that is set and not empty (FLOE_SERVER=
// meant the default before there were other variables): the command line
// wins.
func applyClientEnv(fs *pflag.FlagSet) error {
	for _, name := range clientFlagNames() {
		f := fs.Lookup(name)
		if f == nil || f.Changed {
			continue
		}
		v := os.Getenv(envName(name))
		if v == "" {
			continue
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("%w: %s=%q is not a valid --%s: %v", errUsage, envName(name), v, name, err)
		}
	}
	return nil
}

func (f *clientFlags) validate() error {
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
	cfg, err := f.config(addrs)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	c, err := client.ConnectWith(ctx, cfg)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return c, ctx, cancel, nil
}

// config is the SDK configuration of the flags: TLS when --tls-ca is
// given, a password sign-in when --user is.
func (f *clientFlags) config(addrs []string) (client.Config, error) {
	cfg := client.Config{Addrs: addrs}
	switch {
	case f.tlsCA == "" && (f.tlsCert != "" || f.tlsKey != ""):
		return cfg, fmt.Errorf("%w: --tls-cert and --tls-key need --tls-ca", errUsage)
	case f.tlsCA != "":
		tc, err := client.TLSFromFiles(f.tlsCA, f.tlsCert, f.tlsKey)
		if err != nil {
			return cfg, err
		}
		cfg.TLS = tc
	}
	if f.user != "" {
		p, err := password(f.passwordFile, "password for "+f.user)
		if err != nil {
			return cfg, err
		}
		cfg.User, cfg.Password = f.user, p
	}
	return cfg, nil
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
	usage   string // after "floe ": "db create NAME [--if-not-exists]"
	summary string
	// nargs is the number of positional arguments; with maxArgs > nargs,
	// between nargs and maxArgs.
	nargs, maxArgs int
	// arg is what the first positional argument names.
	arg argKind
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

// spec is the command with the client flags added to its own.
func (cc clientCmd) spec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: cc.usage, summary: cc.summary, client: true, arg: cc.arg,
		define: func(fs *flag.FlagSet) runFunc {
			cf := addClientFlags(fs)
			if cc.flags != nil {
				cc.flags(fs)
			}
			return func(ctx context.Context, pos []string) error { return cc.exec(ctx, env, cf, pos) }
		}}
}

// clientSpecs are the specs of cmds.
func clientSpecs(env *cliEnv, cmds []clientCmd) []cmdSpec {
	specs := make([]cmdSpec, len(cmds))
	for i, cc := range cmds {
		specs[i] = cc.spec(env)
	}
	return specs
}

// exec checks the parsed arguments, connects with the client flags and
// runs the body.
func (cc clientCmd) exec(ctx context.Context, env *cliEnv, cf *clientFlags, pos []string) error {
	var err error
	if cc.prepare != nil {
		if pos, err = cc.prepare(cf, pos); err != nil {
			return err
		}
	}
	if len(pos) < cc.nargs || len(pos) > max(cc.nargs, cc.maxArgs) {
		return fmt.Errorf("%w: wrong number of arguments (%d)", errUsage, len(pos))
	}
	if err := cf.validate(); err != nil {
		return err
	}
	if _, err := serverAddrs(cf.servers); err != nil {
		return err
	}
	if err := cc.arg.check(pos); err != nil {
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
