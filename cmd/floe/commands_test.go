package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpOnEveryGroup: -h, --help and `floe help GROUP` print a group's
// subcommands to stdout and exit 0.
func TestHelpOnEveryGroup(t *testing.T) {
	groups := map[string][]string{
		"db":       {"create", "list", "drop"},
		"table":    {"create", "list", "describe", "drop", "elect", "export", "import"},
		"cluster":  {"status", "add-voter", "remove-voter", "transfer-leadership"},
		"node":     {"drain", "undrain", "remove"},
		"reassign": {"status", "cancel"},
		"log":      {"dump", "verify"},
		"schema":   {"check", "rows"},
		"bench":    {"produce", "e2e", "upsert", "lookup"},
	}
	for group, subs := range groups {
		for _, args := range [][]string{{group, "-h"}, {group, "--help"}, {"help", group}} {
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 || errOut != "" {
				t.Errorf("floe %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
			}
			for _, sub := range subs {
				if !strings.Contains(out, "\n  "+sub+" ") {
					t.Errorf("floe %s does not list %s:\n%s", strings.Join(args, " "), sub, out)
				}
			}
		}
	}
}

// TestHelp: the root help lists every command and the client flags with
// their environment variables; a command's help lists its own flags and
// the client flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"-h"}, {"--help"}, {"help"}, {"-help"}} {
		code, out, _ := runCLI(t, "", args...)
		if code != 0 {
			t.Errorf("floe %v: exit %d", args, code)
		}
		for _, want := range []string{"dev", "serve", "db", "table", "cluster", "node", "recover", "health", "produce", "consume", "lookup",
			"bench", "log", "schema", "version", "completion", "FLOE_SERVER", "FLOE_OUTPUT", "FLOE_TIMEOUT", "-o, --output"} {
			if !strings.Contains(out, want) {
				t.Errorf("floe %v does not mention %s:\n%s", args, want, out)
			}
		}
	}
	code, out, _ := runCLI(t, "", "db", "create", "-h")
	for _, want := range []string{"floe db create NAME", "--if-not-exists", "-s, --server", "(env FLOE_SERVER)", "--timeout"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("floe db create -h: exit %d, no %q in\n%s", code, want, out)
		}
	}
}

// TestUsageMistakes: what cobra refuses (unknown flags, commands and
// subcommands, a bad value) and what the commands refuse (argument
// counts) exit 2 with the command's usage line, before connecting.
func TestUsageMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"db", "list", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"db", "list", "-x"}, "unknown shorthand flag: 'x'"},
		{[]string{"--bogus", "db", "list"}, "unknown flag: --bogus"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"db"}, "floe db create|drop|list"},
		{[]string{"db", "nope"}, `unknown subcommand "nope" (want create, drop or list)`},
		{[]string{"db", "nope", "--server", "127.0.0.1:1"}, `unknown subcommand "nope"`},
		{[]string{"table", "list"}, "wrong number of arguments (0)"},
		{[]string{"db", "create", "a", "b"}, "wrong number of arguments (2)"},
		{[]string{"db", "list", "-o", "yaml", "--server", "127.0.0.1:1"}, `invalid argument "yaml" for "-o, --output" flag: must be text or json`},
		{[]string{"table", "create", "d.t", "--buckets", "many"}, `invalid argument "many" for "--buckets"`},
		{[]string{"dev", "--server", "127.0.0.1:1"}, "unknown flag: --server"},
		{[]string{"completion", "tcsh"}, `unknown subcommand "tcsh" (want bash, fish, powershell or zsh)`},
		{[]string{"help", "nosuch"}, `unknown command "nosuch"`},
		{[]string{"help", "db", "nope"}, `unknown command "db nope"`},
		{[]string{"--server"}, "flag --server needs a value"},
		{[]string{"-s"}, "flag --server needs a value"},
		{[]string{"--server", "127.0.0.1:1"}, "--server is a flag of commands, and no command is given"},
		{[]string{"-ojson"}, "--output is a flag of commands, and no command is given"},
		{[]string{"serve", "--roles", "meta,nope"}, `invalid argument "meta,nope" for "--roles" flag: must be one or more of meta, tablet`},
		{[]string{"dev", "--log-level", "loud"}, `invalid argument "loud" for "--log-level" flag: must be debug, info, warn or error`},
		{[]string{"chaos", "list", "-o", "yaml"}, "must be text or json"},
	} {
		code, _, errOut := runCLI(t, "", tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "\nUsage: floe") {
			t.Errorf("floe %s: exit %d, %q; want exit 2, %q and the usage line", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

// TestClientEnvIsUsage: a client flag's environment variable that does not
// parse is a usage mistake naming the variable.
func TestClientEnvIsUsage(t *testing.T) {
	t.Setenv("FLOE_TIMEOUT", "soon")
	code, _, errOut := runCLI(t, "", "db", "list", "--server", "127.0.0.1:1")
	if code != 2 || !strings.Contains(errOut, `FLOE_TIMEOUT="soon" is not a valid --timeout`) {
		t.Fatalf("FLOE_TIMEOUT=soon: exit %d, %q", code, errOut)
	}
}

// TestVersionForms: --version, -v, -version and the version command print
// the same line.
func TestVersionForms(t *testing.T) {
	_, want, _ := runCLI(t, "", "version")
	if !strings.HasPrefix(want, "floe ") {
		t.Fatalf("floe version: %q", want)
	}
	for _, args := range [][]string{{"--version"}, {"-v"}, {"-version"}} {
		if code, out, _ := runCLI(t, "", args...); code != 0 || out != want {
			t.Errorf("floe %v: exit %d, %q; want %q", args, code, out, want)
		}
	}
}

// TestCompletion: `floe completion SHELL` prints a script for the shell
// that completes floe's commands.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_floe floe",
		"zsh":  "compdef _floe floe",
		"fish": "complete -c floe",
	} {
		code, out, errOut := runCLI(t, "", "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("floe completion %s: exit %d, %q, stdout without %q", shell, code, errOut, want)
		}
	}
	// What the scripts ask floe for: the subcommands of a group.
	code, out, _ := runCLI(t, "", "__complete", "db", "")
	for _, sub := range []string{"create", "list", "drop"} {
		if code != 0 || !strings.Contains(out, sub) {
			t.Errorf("__complete db: exit %d, no %s in %q", code, sub, out)
		}
	}
}

// TestClientFlagsAnywhere: the client flags work before the command, after
// it, between the group and the subcommand, with short forms, with one
// dash, and from FLOE_* variables, the command line winning.
func TestClientFlagsAnywhere(t *testing.T) {
	addr := startDev(t)
	if code, _, errOut := runCLI(t, "", "db", "create", "anywhere", "--server", addr); code != 0 {
		t.Fatalf("db create: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{
		{"--server", addr, "db", "list"},
		{"db", "list", "--server", addr},
		{"db", "--server", addr, "list"},
		{"-s", addr, "db", "list"},
		{"db", "list", "-s", addr},
		{"--server=" + addr, "db", "list"},
		{"-server", addr, "db", "list"},
		{"db", "list", "-server=" + addr},
	} {
		code, out, errOut := runCLI(t, "", args...)
		if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "anywhere") {
			t.Errorf("floe %s: exit %d, %q, %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	isJSON := func(args []string) {
		t.Helper()
		code, out, errOut := runCLI(t, "", args...)
		var dbs []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &dbs) != nil || len(dbs) == 0 {
			t.Errorf("floe %s: exit %d, not a JSON list: %q %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	isJSON([]string{"db", "list", "-o", "json", "--server", addr})
	isJSON([]string{"-o", "json", "db", "list", "--server", addr})
	isJSON([]string{"db", "list", "-ojson", "--server", addr})
	isJSON([]string{"db", "list", "-output", "json", "--server", addr})

	t.Setenv("FLOE_SERVER", addr)
	t.Setenv("FLOE_OUTPUT", "json")
	t.Setenv("FLOE_TIMEOUT", "10s")
	isJSON([]string{"db", "list"})
	// The command line wins over the environment.
	if code, out, errOut := runCLI(t, "", "db", "list", "-o", "text"); code != 0 || !strings.HasPrefix(out, "NAME") {
		t.Errorf("FLOE_OUTPUT=json, -o text: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "", "db", "list", "--timeout", "0s"); code != 2 || !strings.Contains(errOut, "--timeout must be positive") {
		t.Errorf("FLOE_TIMEOUT=10s, --timeout 0s: exit %d, %q", code, errOut)
	}
	t.Setenv("FLOE_SERVER", "127.0.0.1:1")
	isJSON([]string{"db", "list", "--server", addr})
	// An empty variable is no variable.
	t.Setenv("FLOE_SERVER", "")
	t.Setenv("FLOE_OUTPUT", "")
	if code, out, errOut := runCLI(t, "", "db", "list", "--server", addr); code != 0 || !strings.HasPrefix(out, "NAME") {
		t.Errorf("FLOE_OUTPUT empty: exit %d, %q %q", code, out, errOut)
	}
}

// TestOneDashLongFlags: long flags written with one dash, as Go's flag
// package took them, still work; after "--" nothing is rewritten.
func TestOneDashLongFlags(t *testing.T) {
	dir := writeLog(t, 20)
	code, out, errOut := runCLI(t, "", "log", "dump", dir, "-from", "10", "-limit=3")
	if lines := strings.Count(out, "\n"); code != 0 || lines != 3 {
		t.Fatalf("log dump -from 10 -limit=3: exit %d, %d lines, %q", code, lines, errOut)
	}
	for _, args := range [][]string{{"-output", "json"}, {"-o", "json"}, {"--output=json"}} {
		code, out, errOut := runCLI(t, "", append([]string{"log", "verify", dir}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "{") {
			t.Errorf("log verify %v: exit %d, %q %q", args, code, out, errOut)
		}
	}
	root := newRootCmd(&cliEnv{})
	got := longFlagsWithOneDash(root, []string{"-server", "A", "-o", "-ojson", "-nope", "-limit=3", "--", "-from"})
	want := []string{"--server", "A", "-o", "-ojson", "-nope", "--limit=3", "--", "-from"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("longFlagsWithOneDash = %q, want %q", got, want)
	}
}

// TestErrorsAsJSON: under --output json (or FLOE_OUTPUT=json) a failure is
// one JSON object on stderr with its code and exit status, and stdout
// stays empty; without it, the error is a line.
func TestErrorsAsJSON(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		env      string
		code     string
		exit     int
		hasUsage bool
	}{
		{args: []string{"db", "list", "-o", "json", "--bogus"}, code: "USAGE", exit: 2, hasUsage: true},
		{args: []string{"db", "list", "--bogus"}, env: "json", code: "USAGE", exit: 2, hasUsage: true},
		{args: []string{"db", "list", "-o", "json", "--server", "127.0.0.1:1", "--timeout", "1s"}, code: "UNAVAILABLE", exit: 1},
		{args: []string{"log", "verify", "-o", "json", "/nonexistent/floe-log"}, code: "FAILED", exit: 1},
		{args: []string{"schema", "check", "-o", "json", "id BIGINTEGER"}, code: "INVALID_SCHEMA", exit: 1},
	} {
		t.Setenv("FLOE_OUTPUT", tc.env)
		code, out, errOut := runCLI(t, "", tc.args...)
		var e jsonError
		dec := json.NewDecoder(strings.NewReader(errOut))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || dec.More() {
			t.Errorf("floe %s: stderr is not one JSON object (%v): %q", strings.Join(tc.args, " "), err, errOut)
			continue
		}
		if code != tc.exit || out != "" || e.Code != tc.code || e.Exit != tc.exit || e.Error == "" || e.Command == "" || (e.Usage != "") != tc.hasUsage {
			t.Errorf("floe %s: exit %d, stdout %q, error %+v; want exit and code %d %s", strings.Join(tc.args, " "), code, out, e, tc.exit, tc.code)
		}
	}
	code, _, errOut := runCLI(t, "", "db", "list", "--bogus")
	if code != 2 || !strings.HasPrefix(errOut, "floe db list: ") {
		t.Errorf("without -o json: exit %d, %q", code, errOut)
	}
}

// completions are the values a `floe __complete` answer offers.
func completions(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := runCLI(t, "", append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut)
	}
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, ":") {
			values = append(values, line)
		}
	}
	return values
}

// TestCompletionOfValues: completion offers the values of flags with a
// fixed set, and the databases and tables (DB.TABLE) of the server the
// client flags name; a server that does not answer completes nothing,
// silently.
func TestCompletionOfValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"db", "list", "--output", ""}, []string{"text", "json"}},
		{[]string{"log", "dump", "-o", ""}, []string{"text", "json"}},
		{[]string{"produce", "d.t", "--acks", ""}, []string{"all", "1", "0"}},
		{[]string{"serve", "--roles", ""}, []string{"meta", "tablet", "meta,tablet"}},
		{[]string{"serve", "--log-sync", ""}, []string{"always", "interval", "never"}},
		{[]string{"dev", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
	} {
		if got := completions(t, tc.args...); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("__complete %v = %q, want %q", tc.args, got, tc.want)
		}
	}

	fc := startCluster(t)
	table := fc.createTable("completed", "id BIGINT NOT NULL", 1, 1)
	srv := "--server=" + fc.server
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "describe", srv, ""}, table},
		{[]string{"table", "describe", srv, fc.db + "."}, table},
		{[]string{"consume", srv, fc.db[:3]}, table},
		{[]string{"bench", "produce", srv, "--table", fc.db}, table},
		{[]string{"table", "list", srv, fc.db[:3]}, fc.db},
		{[]string{"db", "drop", srv, ""}, fc.db},
	} {
		if got := completions(t, tc.args...); !slices.Contains(got, tc.want) {
			t.Errorf("__complete %v = %q, want %s among them", tc.args, got, tc.want)
		}
	}
	if got := completions(t, "table", "describe", srv, "nosuchdb."); len(got) != 0 {
		t.Errorf("tables of a database that does not exist: %q", got)
	}
	if got := completions(t, "table", "describe", table, srv, ""); len(got) != 0 {
		t.Errorf("a second argument: %q", got)
	}
	code, out, errOut := runCLI(t, "", "__complete", "table", "describe", "--server", "127.0.0.1:1", "")
	if code != 0 || strings.TrimSpace(out) != ":4" || !strings.HasPrefix(errOut, "Completion ended") {
		t.Errorf("nothing listening: exit %d, %q, %q", code, out, errOut)
	}
}

// TestUsageLinesNameEveryFlag: a command's usage line (its -h, and the
// line after a usage mistake) names each of its flags but the client
// flags, which `floe -h` lists; a flag written in the usage is not
// repeated.
func TestUsageLinesNameEveryFlag(t *testing.T) {
	root := newRootCmd(&cliEnv{})
	client := map[string]bool{"help": true}
	for _, name := range clientFlagNames() {
		client[name] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() || c.RunE == nil || strings.HasPrefix(c.CommandPath(), "floe completion ") {
			return // a group, or cobra's own
		}
		line := c.UseLine()
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if n := strings.Count(line+" ", "--"+f.Name+" ") + strings.Count(line, "--"+f.Name+"]"); !client[f.Name] && n != 1 {
				t.Errorf("usage line of %s names --%s %d times: %s", c.CommandPath(), f.Name, n, line)
			}
		})
	}
	walk(root)
	code, out, _ := runCLI(t, "", "dev", "-h")
	for _, want := range []string{"[--log-level debug|info|warn|error]", "[--remote-dir DIR]", "[--tiering-interval 1m0s]"} {
		if code != 0 || !strings.Contains(out, "floe dev [--data-dir DIR]") || !strings.Contains(out, want) {
			t.Errorf("floe dev -h: exit %d, no %q in\n%s", code, want, out)
		}
	}
}
