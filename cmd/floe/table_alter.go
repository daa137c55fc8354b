package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// listFlag collects a repeated flag's values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ", ") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func tableAlterCmd(env *cliEnv) clientCmd {
	set := propertyFlag{}
	var reset, addColumns listFlag
	var comment *string
	return clientCmd{summary: "change a table's properties, add nullable columns or set its comment",
		usage: "table alter DB.TABLE [--set KEY=VALUE]... [--reset KEY]... [--add-column 'NAME TYPE']... [--comment TEXT]",
		nargs: 1, arg: argTable,
		flags: func(fs *flag.FlagSet) {
			fs.Var(set, "set", "give a mutable property a value, key=value (repeatable)")
			fs.Var(&reset, "reset", "take a property back to its default (repeatable)")
			fs.Var(&addColumns, "add-column", "add a nullable column at the end, 'NAME TYPE' (repeatable)")
			fs.Func("comment", "set the table's comment (\"\" clears it)", func(v string) error {
				comment = &v
				return nil
			})
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			alter := client.AlterTable{Set: set, Reset: reset, Comment: comment}
			for _, src := range addColumns {
				sch, err := record.ParseSchema(src)
				if err != nil || len(sch.Columns) != 1 {
					return fmt.Errorf("%w: --add-column %q: want one column like 'note STRING': %v", errUsage, src, err)
				}
				alter.AddColumns = append(alter.AddColumns, sch.Columns[0])
			}
			if len(set) == 0 && len(reset) == 0 && len(addColumns) == 0 && alter.Comment == nil {
				return fmt.Errorf("%w: nothing to change: give --set, --reset, --add-column or --comment", errUsage)
			}
			before, err := c.Admin().DescribeTable(ctx, db, name)
			if err != nil {
				return err
			}
			var unchanged bool
			t, err := c.Admin().AlterTable(ctx, db, name, alter, client.Unchanged(&unchanged))
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, t)
			}
			if unchanged {
				fmt.Fprintf(env.stdout, "table %s.%s unchanged: it already was as asked\n", db, name)
				return nil
			}
			for _, line := range alterChanges(before, t) {
				fmt.Fprintln(env.stdout, line)
			}
			return nil
		}}
}

// alterChanges says what changed between two descriptions of a table.
func alterChanges(before, after *client.TableInfo) []string {
	var out []string
	keys := make([]string, 0, len(before.Properties)+len(after.Properties))
	for k := range before.Properties {
		keys = append(keys, k)
	}
	for k := range after.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		old, had := before.Properties[k]
		cur, has := after.Properties[k]
		switch {
		case had && !has:
			out = append(out, fmt.Sprintf("property %s: %s -> default", k, old))
		case !had && has:
			out = append(out, fmt.Sprintf("property %s: default -> %s", k, cur))
		case old != cur:
			out = append(out, fmt.Sprintf("property %s: %s -> %s", k, old, cur))
		}
	}
	for _, col := range after.Columns[min(len(before.Columns), len(after.Columns)):] {
		out = append(out, fmt.Sprintf("column %s %s added (schema version %d)", col.Name, col.Type, after.SchemaID))
	}
	if before.Comment != after.Comment {
		out = append(out, fmt.Sprintf("comment: %q -> %q", before.Comment, after.Comment))
	}
	return append(out, fmt.Sprintf("altered table %s.%s", after.Database, after.Name))
}
