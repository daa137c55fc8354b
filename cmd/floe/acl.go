package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/floedb/floe/client"
)

// aclFlags choose the entries of floe acl add and remove.
type aclFlags struct {
	principal, host, operations string
	cluster                     bool
	database, table             string
	prefix, deny                bool
}

func (f *aclFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.principal, "principal", "", "who: user:NAME, node:ID, or user:* for every user")
	fs.StringVar(&f.host, "host", "*", "from which IP address (* for any)")
	fs.StringVar(&f.operations, "operation", "", "comma-separated operations: "+strings.Join(client.Operations, ", "))
	fs.BoolVar(&f.cluster, "cluster", false, "on the cluster (and everything in it)")
	fs.StringVar(&f.database, "database", "", "on a database (and its tables)")
	fs.StringVar(&f.table, "table", "", "on a table, DB.TABLE")
	fs.BoolVar(&f.prefix, "prefix", false, "--database or --table is a prefix: every name starting with it")
	fs.BoolVar(&f.deny, "deny", false, "deny instead of allow (deny wins)")
}

// entries are the ACL entries the flags say: one per operation.
func (f *aclFlags) entries() ([]client.ACL, error) {
	base := client.ACL{Principal: f.principal, Host: f.host, Prefix: f.prefix, Deny: f.deny}
	chosen := 0
	if f.cluster {
		chosen++
		base.Resource = "cluster"
	}
	if f.database != "" {
		chosen++
		base.Resource, base.Name = "database", f.database
	}
	if f.table != "" {
		chosen++
		base.Resource, base.Name = "table", f.table
	}
	switch {
	case f.principal == "":
		return nil, fmt.Errorf("%w: --principal is required (user:NAME, node:ID or user:*)", errUsage)
	case chosen != 1:
		return nil, fmt.Errorf("%w: give one of --cluster, --database or --table", errUsage)
	case f.cluster && f.prefix:
		return nil, fmt.Errorf("%w: --prefix goes with --database or --table", errUsage)
	case f.operations == "":
		return nil, fmt.Errorf("%w: --operation is required (%s)", errUsage, strings.Join(client.Operations, ", "))
	}
	var out []client.ACL
	for _, op := range splitList(f.operations) {
		e := base
		e.Operation = op
		out = append(out, e)
	}
	return out, nil
}

// aclCmds are the subcommands of floe acl.
func aclCmds(env *cliEnv) []clientCmd {
	var add, remove aclFlags
	var listPrincipal string
	return []clientCmd{
		{usage: "acl add --principal P --operation OP[,OP] (--cluster | --database DB | --table DB.TABLE) [--prefix] [--deny] [--host IP]",
			summary: "allow (or deny) a principal operations on a resource",
			flags:   add.define,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
				entries, err := add.entries()
				if err != nil {
					return err
				}
				n, err := c.Admin().AddACLs(ctx, entries...)
				if err != nil {
					return err
				}
				return printResult(env, cf, map[string]any{"added": n}, "added %d ACL entries (%d already present)\n", n, len(entries)-n)
			}},
		{usage: "acl remove --principal P --operation OP[,OP] (--cluster | --database DB | --table DB.TABLE) [--prefix] [--deny] [--host IP]",
			summary: "remove ACL entries (the same flags as add); takes effect on every node within a second",
			flags:   remove.define,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
				entries, err := remove.entries()
				if err != nil {
					return err
				}
				n, err := c.Admin().RemoveACLs(ctx, entries...)
				if err != nil {
					return err
				}
				return printResult(env, cf, map[string]any{"removed": n}, "removed %d ACL entries (%d not present)\n", n, len(entries)-n)
			}},
		{usage: "acl list [--principal P]", summary: "list the ACL entries",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&listPrincipal, "principal", "", "only this principal's entries")
			},
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
				acls, err := c.Admin().ListACLs(ctx)
				if err != nil {
					return err
				}
				var shown []client.ACL
				for _, e := range acls {
					if listPrincipal == "" || e.Principal == listPrincipal {
						shown = append(shown, e)
					}
				}
				if cf.output == "json" {
					return printJSON(env, shown)
				}
				w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tHOST")
				for _, e := range shown {
					perm := "allow"
					if e.Deny {
						perm = "deny"
					}
					res := e.Resource
					if e.Name != "" {
						res += " " + e.Name
					}
					if e.Prefix {
						res += "*"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.Principal, perm, e.Operation, res, e.Host)
				}
				return w.Flush()
			}},
	}
}
