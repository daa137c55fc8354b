package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cmdSpec is one runnable command. Its flags are defined once, on a
// standard flag.FlagSet; cobra parses them through pflag, and they give
// the help text and shell completion too.
type cmdSpec struct {
	usage   string // after "floe ": "log dump DIR [--from OFFSET] [--limit N]"
	summary string
	// client commands take the client flags, each with its FLOE_*
	// environment variable.
	client bool
	// arg is what the first positional argument names, for completion.
	arg argKind
	// define registers the command's flags and returns its body, which
	// runs with the positional arguments once the flags are parsed.
	define func(fs *flag.FlagSet) runFunc
}

// clientAnnotation marks a client command in its cobra annotations.
const clientAnnotation = "floe.client"

type runFunc func(ctx context.Context, pos []string) error

// rootHelp heads `floe -h`; the client flags are appended from their
// definition.
const rootHelp = `Floe: a streaming storage cluster.

Client commands (db, table, cluster, node, user, acl, produce, consume, lookup, bench)
take these flags, before or after the command name (floe -s A db list,
floe db list -s A); a flag not given reads its FLOE_* environment variable:

%s
Long flags also work with one dash (-server A), as with Go's flag package.
Exit status: 0 done, 1 failed, 2 a usage mistake.`

func newRootCmd(env *cliEnv) *cobra.Command {
	root := &cobra.Command{
		Use:                   "floe COMMAND",
		Short:                 "Floe: a streaming storage cluster",
		Long:                  fmt.Sprintf(rootHelp, clientFlagUsages()),
		Version:               versionString(),
		Args:                  cobra.ArbitraryArgs,
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
		},
	}
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.SetIn(env.stdin)
	root.SetVersionTemplate("{{.Version}}\n")
	// Inherited by every command: a flag cobra cannot parse is a usage
	// mistake, exit 2.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v", errUsage, err)
	})
	root.AddCommand(
		leafCmd(devSpec(env), ""),
		leafCmd(serveSpec(env), ""),
		groupCmd("db", "create, list and drop databases", clientSpecs(env, dbCmds(env))),
		groupCmd("table", "create, list, describe, drop tables, elect their leaders and move their replicas", clientSpecs(env, tableCmds(env))),
		groupCmd("cluster", "cluster status and metadata group membership", clientSpecs(env, clusterCmds(env))),
		groupCmd("node", "drain a tablet node's leaderships before a planned stop", clientSpecs(env, nodeCmds(env))),
		groupCmd("reassign", "follow and cancel moves of bucket replicas (floe table reassign starts them)", clientSpecs(env, reassignCmds(env))),
		groupCmd("user", "create, list and delete users who sign in with passwords", clientSpecs(env, userCmds(env))),
		groupCmd("acl", "allow and deny principals operations on the cluster, databases and tables", clientSpecs(env, aclCmds(env))),
		groupCmd("cert", "make a CA, node and user certificates, and gossip keys for a cluster", certSpecs(env)),
		leafCmd(recoverSpec(env), ""),
		leafCmd(healthSpec(env), ""),
		groupCmd("chaos", "run the fault-injection scenarios against clusters of this binary (needs root)", chaosSpecs(env)),
		leafCmd(produceCmd(env).spec(env), ""),
		leafCmd(consumeCmd(env).spec(env), ""),
		leafCmd(lookupCmd(env).spec(env), ""),
		groupCmd("bench", "measure throughput and latency (produce, e2e, upsert, lookup, suite), idle cost (density), what the machine allows (floor), and compare a suite run with the peers' (compare)",
			append(clientSpecs(env, benchCmds(env)), benchDensitySpec(env), benchFloorSpec(env), benchCompareSpec(env), benchHostileSpec(env))),
		groupCmd("log", "inspect and verify log folders on disk (dump, verify)", logSpecs(env)),
		groupCmd("schema", "parse and check a table schema", schemaSpecs(env)),
		leafCmd(versionSpec(env), ""),
	)
	// cobra's help command, whose unknown topic would print the root help
	// and exit 0.
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Use, c.DisableFlagsInUseLine = "help [COMMAND...]", true
			c.Run, c.RunE = nil, helpTopic
		}
	}
	// cobra's completion command, made now (ExecuteC would, later) so that
	// an unknown shell is a usage mistake like an unknown subcommand.
	root.InitDefaultCompletionCmd()
	root.AddCommand(cliDocCmd(root))
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "print a shell completion script: floe completion bash|zsh|fish|powershell"
			c.Args = cobra.ArbitraryArgs
			c.RunE = refuseSubcommand(c.Name(), subcommandNames(c))
		}
	}
	return root
}

// groupCmd is a command whose subcommands do the work: `floe db -h`
// lists them; `floe db` alone or with an unknown subcommand is a usage
// mistake.
func groupCmd(name, summary string, specs []cmdSpec) *cobra.Command {
	g := &cobra.Command{
		Use:                   name + " COMMAND",
		Short:                 summary,
		Args:                  cobra.ArbitraryArgs,
		DisableFlagsInUseLine: true,
		// `floe db nope --server A` is about nope, not about the flag.
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
	}
	for _, s := range specs {
		g.AddCommand(leafCmd(s, name))
	}
	g.RunE = refuseSubcommand(name, subcommandNames(g))
	return g
}

// refuseSubcommand is the body of a group: reached only without a known
// subcommand, a usage mistake.
func refuseSubcommand(group string, names []string) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%w: floe %s %s", errUsage, group, strings.Join(names, "|"))
		}
		return fmt.Errorf("%w: unknown subcommand %q (want %s)", errUsage, args[0], orList(names))
	}
}

// subcommandNames are the names of c's visible subcommands, sorted.
func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return names
}

// leafCmd turns a cmdSpec into a cobra command under group ("" for a
// top-level command).
func leafCmd(s cmdSpec, group string) *cobra.Command {
	use := s.usage
	if group != "" {
		use = strings.TrimPrefix(use, group+" ")
	}
	gofs := flag.NewFlagSet(s.usage, flag.ContinueOnError)
	body := s.define(gofs)
	cmd := &cobra.Command{
		Use:                   use,
		Short:                 s.summary,
		Args:                  cobra.ArbitraryArgs, // each body counts its own
		DisableFlagsInUseLine: true,
		Annotations:           map[string]string{},
		RunE: func(cmd *cobra.Command, pos []string) error {
			if s.client {
				if err := applyClientEnv(cmd.Flags()); err != nil {
					return err
				}
			}
			return body(cmd.Context(), pos)
		},
	}
	if s.client {
		cmd.Annotations[clientAnnotation] = "true"
		cmd.ValidArgsFunction = completeArg(s.arg)
	}
	addGoFlags(cmd.Flags(), gofs)
	registerFlagCompletions(cmd, gofs)
	cmd.Use += flagsLeftOut(use, cmd.Flags(), s.client)
	return cmd
}

// flagsLeftOut is the part of a usage line that names the flags the
// written usage leaves out (" [--log-level warn] [--remote-dir DIR]"), so
// that every flag of a command is in its usage line; the client flags,
// which `floe -h` lists, are left to that.
func flagsLeftOut(usage string, fs *pflag.FlagSet, client bool) string {
	skip := map[string]bool{"help": true}
	if client {
		for _, name := range clientFlagNames() {
			skip[name] = true
		}
	}
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if skip[f.Name] || mentionsFlag(usage, f.Name) {
			return
		}
		b.WriteString(" [--" + f.Name)
		if f.NoOptDefVal == "" {
			b.WriteString(" " + flagPlaceholder(f))
		}
		b.WriteString("]")
	})
	return b.String()
}

// mentionsFlag reports whether usage names --name (not just a longer
// flag that starts with it).
func mentionsFlag(usage, name string) bool {
	for rest := usage; ; {
		_, after, found := strings.Cut(rest, "--"+name)
		if !found {
			return false
		}
		if after == "" || strings.ContainsRune(" ]=|[", rune(after[0])) {
			return true
		}
		rest = after
	}
}

// flagPlaceholder stands for f's value in a usage line: its choices, its
// default when it has one, or a word for what it takes.
func flagPlaceholder(f *pflag.Flag) string {
	if c, ok := f.Value.(*choiceValue); ok && !c.list {
		return strings.Join(c.choices, "|")
	}
	if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
		return f.DefValue
	}
	switch f.Value.Type() {
	case "int", "int64", "uint", "uint64":
		return "N"
	case "duration":
		return "DURATION"
	case "string":
		words := strings.Split(f.Name, "-")
		return strings.ToUpper(words[len(words)-1])
	}
	return strings.ToUpper(f.Value.Type())
}

// addGoFlags adds the flags of gofs to fs, with their short forms.
func addGoFlags(fs *pflag.FlagSet, gofs *flag.FlagSet) {
	gofs.VisitAll(func(f *flag.Flag) {
		pf := pflag.PFlagFromGoFlag(f)
		pf.Shorthand = shorthand(f.Name)
		fs.AddFlag(pf)
	})
}

// shorthand is the one-letter form of a long flag, or "".
func shorthand(name string) string {
	switch name {
	case "output":
		return "o"
	case "server":
		return "s"
	}
	return ""
}

// longFlagsWithOneDash rewrites -name and -name=value to --name for the
// long flags of the tree: Go's flag package took one dash, so command
// lines written for it keep working. Arguments after "--" are left alone,
// and so is an argument that only looks like a long flag (a value of
// "-from" would be rewritten too: give it as --flag=-from).
func longFlagsWithOneDash(root *cobra.Command, args []string) []string {
	names := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			if name, _, _ := strings.Cut(a[1:], "="); names[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// helpTopic is the body of `floe help [COMMAND...]`: the help of the
// command named, a usage mistake when there is none.
func helpTopic(help *cobra.Command, args []string) error {
	cmd, rest, err := help.Root().Find(args)
	if err != nil || len(rest) > 0 {
		return fmt.Errorf("%w: unknown command %q", errUsage, strings.Join(args, " "))
	}
	return cmd.Help()
}

// commandFlagWithoutCommand refuses a command's flag on a command line of
// flags alone (floe --server, floe -o json): cobra would look for it on the
// root, which has none, and call it an unknown flag. A flag that takes a
// value and comes last is missing its value.
func commandFlagWithoutCommand(root *cobra.Command, args []string) error {
	var given *pflag.Flag // the first command flag
	needsValue := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil // a command (or an argument cobra judges)
		}
		f := treeFlag(root, a)
		if f == nil {
			continue // the root's own, or unknown anywhere: cobra's to judge
		}
		inline := strings.Contains(a, "=") || !strings.HasPrefix(a, "--") && len(a) > 2 // --name=v, -xv
		takesNext := f.NoOptDefVal == "" && !inline
		if given == nil {
			given, needsValue = f, takesNext && i == len(args)-1
		}
		if takesNext {
			i++
		}
	}
	switch {
	case given == nil:
		return nil
	case needsValue:
		return fmt.Errorf("%w: flag --%s needs a value, and a command: floe COMMAND --%s VALUE", errUsage, given.Name, given.Name)
	}
	return fmt.Errorf("%w: --%s is a flag of commands, and no command is given (floe COMMAND --%s ...; floe -h lists them)", errUsage, given.Name, given.Name)
}

// treeFlag is the flag of some command of the tree that arg (--name,
// --name=value, -x, -xvalue) gives, or nil.
func treeFlag(root *cobra.Command, arg string) *pflag.Flag {
	var name, short string
	switch {
	case strings.HasPrefix(arg, "--") && len(arg) > 2:
		name, _, _ = strings.Cut(arg[2:], "=")
	case strings.HasPrefix(arg, "-") && len(arg) > 1:
		short = arg[1:2]
	default:
		return nil
	}
	var found *pflag.Flag
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if found == nil && f.Name != "help" && f.Name != "version" && (f.Name == name || short != "" && f.Shorthand == short) {
				found = f
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return found
}
