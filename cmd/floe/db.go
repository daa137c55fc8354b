package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/floedb/floe/client"
)

// dbCmds are the subcommands of floe db.
func dbCmds(env *cliEnv) []clientCmd {
	var ifNotExists, ifExists, cascade bool
	return []clientCmd{
		{usage: "db create NAME [--if-not-exists]", summary: "create a database", nargs: 1, arg: argNewDatabase,
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the database exists")
			},
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				var existed bool
				opts := []client.Option{client.Unchanged(&existed)}
				if ifNotExists {
					opts = append(opts, client.IfNotExists())
				}
				if err := c.Admin().CreateDatabase(ctx, pos[0], opts...); err != nil {
					return err
				}
				if existed {
					return printResult(env, cf, map[string]any{"created": pos[0], "unchanged": true}, "database %s already exists\n", pos[0])
				}
				return printResult(env, cf, map[string]any{"created": pos[0], "unchanged": false}, "created database %s\n", pos[0])
			}},
		{usage: "db drop NAME [--cascade] [--if-exists]", summary: "drop a database", nargs: 1, arg: argDatabase,
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&cascade, "cascade", false, "drop the database's tables too")
				fs.BoolVar(&ifExists, "if-exists", false, "succeed if the database does not exist")
			},
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				var missing bool
				opts := []client.Option{client.Unchanged(&missing)}
				if cascade {
					opts = append(opts, client.Cascade())
				}
				if ifExists {
					opts = append(opts, client.IfExists())
				}
				if err := c.Admin().DropDatabase(ctx, pos[0], opts...); err != nil {
					return err
				}
				if missing {
					return printResult(env, cf, map[string]any{"dropped": pos[0], "unchanged": true}, "database %s does not exist\n", pos[0])
				}
				return printResult(env, cf, map[string]any{"dropped": pos[0], "unchanged": false}, "dropped database %s\n", pos[0])
			}},
		{usage: "db list", summary: "list the databases",
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
				dbs, err := c.Admin().ListDatabases(ctx)
				if err != nil {
					return err
				}
				if cf.output == "json" {
					return printJSON(env, dbs)
				}
				w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tID")
				for _, d := range dbs {
					fmt.Fprintf(w, "%s\t%d\n", d.Name, d.ID)
				}
				return w.Flush()
			}},
	}
}

// printResult prints a JSON document or a line of text.
func printResult(env *cliEnv, cf *clientFlags, doc any, format string, args ...any) error {
	if cf.output == "json" {
		return printJSON(env, doc)
	}
	_, err := fmt.Fprintf(env.stdout, format, args...)
	return err
}
