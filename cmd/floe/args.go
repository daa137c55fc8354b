package main

import (
	"context"
	"flag"
	"os"
	"strings"
	"time"

	"github.com/floedb/floe/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// argKind is what a command's first positional argument names. A client
// command checks it before connecting (an invalid name is a usage
// mistake, whatever the command) and completes it from the server.
type argKind int

const (
	argNone        argKind = iota
	argDatabase            // an existing database: DB
	argTable               // an existing table: DB.TABLE
	argNewDatabase         // a database to create: checked, not completed
	argNewTable            // a table to create: checked, not completed
)

// check refuses an invalid name in pos[0] as a usage mistake.
func (k argKind) check(pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	switch k {
	case argDatabase, argNewDatabase:
		return databaseName(pos[0])
	case argTable, argNewTable:
		_, _, err := tableName(pos[0])
		return err
	}
	return nil
}

// completionTimeout bounds asking the server for names to complete: a
// shell waits for the answer at every Tab.
const completionTimeout = time.Second

// maxCompletedDatabases bounds the databases whose tables one completion
// lists.
const maxCompletedDatabases = 64

// completeArg completes the first positional argument of a command whose
// arg is kind.
func completeArg(kind argKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return serverNames(cmd, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTableFlag completes a flag that names a table (DB.TABLE).
func completeTableFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return serverNames(cmd, argTable, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// serverNames are the databases (argDatabase) or tables, as DB.TABLE
// (argTable), starting with prefix, on the servers the command's client
// flags name. A server that does not answer within completionTimeout, or
// any failure, completes nothing and says nothing: completion runs at
// every Tab, with no one to read an error.
func serverNames(cmd *cobra.Command, kind argKind, prefix string) []string {
	if kind != argDatabase && kind != argTable {
		return nil
	}
	fs := cmd.Flags()
	if applyClientEnv(fs) != nil || fs.Lookup("server") == nil {
		return nil
	}
	addrs, err := serverAddrs(fs.Lookup("server").Value.String())
	if err != nil {
		return nil
	}
	cf := completionClientFlags(fs)
	if cf.user != "" && os.Getenv(passwordEnv) == "" && cf.passwordFile == "" {
		return nil // completion never prompts
	}
	cfg, err := cf.config(addrs)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	c, err := client.ConnectWith(ctx, cfg)
	if err != nil {
		return nil
	}
	defer c.Close()
	dbs, err := c.Admin().ListDatabases(ctx)
	if err != nil {
		return nil
	}
	var names []string
	listed := 0 // databases whose tables were asked for
	for _, db := range dbs {
		if kind == argDatabase {
			if strings.HasPrefix(db.Name, prefix) {
				names = append(names, db.Name)
			}
			continue
		}
		// The tables of the databases the prefix may still name.
		dbPrefix, _, dotted := strings.Cut(prefix, ".")
		if dotted && db.Name != dbPrefix || !dotted && !strings.HasPrefix(db.Name, prefix) {
			continue
		}
		if listed++; listed > maxCompletedDatabases {
			break
		}
		tables, err := c.Admin().ListTables(ctx, db.Name)
		if err != nil {
			return names
		}
		for _, t := range tables {
			if name := db.Name + "." + t.Name; strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
	}
	return names
}

// registerFlagCompletions completes the values of cmd's flags that have a
// fixed set (choiceValue) and of a client command's --table.
func registerFlagCompletions(cmd *cobra.Command, gofs *flag.FlagSet) {
	gofs.VisitAll(func(f *flag.Flag) {
		var complete cobra.CompletionFunc
		switch v := f.Value.(type) {
		case *choiceValue:
			complete = cobra.FixedCompletions(v.completions(), cobra.ShellCompDirectiveNoFileComp)
		default:
			if f.Name == "table" && cmd.Annotations[clientAnnotation] != "" {
				complete = completeTableFlag
			}
		}
		if complete != nil {
			_ = cmd.RegisterFlagCompletionFunc(f.Name, complete) // a name is registered once
		}
	})
}

// completionClientFlags reads the security flags of a command being
// completed (their values as typed, or from the environment).
func completionClientFlags(fs *pflag.FlagSet) *clientFlags {
	get := func(name string) string {
		if f := fs.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return &clientFlags{tlsCA: get("tls-ca"), tlsCert: get("tls-cert"), tlsKey: get("tls-key"),
		user: get("user"), passwordFile: get("password-file")}
}
