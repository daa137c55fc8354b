package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/storage/record"
)

// tableCmds are the subcommands of floe table.
func tableCmds(env *cliEnv) []clientCmd {
	return []clientCmd{tableCreateCmd(env), tableListCmd(env), tableDescribeCmd(env), tableAlterCmd(env), tableDropCmd(env),
		tablePartitionsCmd(env), tablePartitionCmd(env), tableElectCmd(env),
		tableReassignCmd(env), tableExportCmd(env), tableImportCmd(env), tableSnapshotCmd(env)}
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// propertyFlag collects repeated --property k=v.
type propertyFlag map[string]string

func (p propertyFlag) String() string {
	if len(p) == 0 {
		return ""
	}
	return fmt.Sprint(map[string]string(p))
}

// Type names the value in help text.
func (p propertyFlag) Type() string { return "key=value" }

func (p propertyFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	p[strings.TrimSpace(k)] = val
	return nil
}

// tableName splits a DATABASE.TABLE argument and checks both names: an
// invalid one is a usage mistake, found before connecting.
func tableName(arg string) (db, table string, err error) {
	db, table, err = client.SplitTableName(arg)
	if err != nil {
		return "", "", fmt.Errorf("%w: %q is not DB.TABLE (a database and a table name joined by a dot)", errUsage, arg)
	}
	if err := databaseName(db); err != nil {
		return "", "", err
	}
	if !record.ValidName(table) {
		return "", "", fmt.Errorf("%w: invalid table name %.256q: %s", errUsage, table, record.NameRule)
	}
	return db, table, nil
}

// databaseName checks a database name: an invalid one is a usage mistake.
func databaseName(name string) error {
	if !record.ValidName(name) {
		return fmt.Errorf("%w: invalid database name %.256q: %s", errUsage, name, record.NameRule)
	}
	return nil
}

// openTable opens the table a DB.TABLE argument names, within --timeout.
func openTable(ctx context.Context, c *client.Client, cf *clientFlags, arg string) (*client.Table, error) {
	db, name, err := tableName(arg)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	return c.Table(tctx, db, name)
}

func tableCreateCmd(env *cliEnv) clientCmd {
	var schema, pk, bk, partitionBy string
	var buckets, replication int
	var ifNotExists bool
	props := propertyFlag{}
	return clientCmd{summary: "create a log or primary-key table", nargs: 1, arg: argNewTable,
		usage: "table create DB.TABLE --schema '...' [--primary-key a,b] [--bucket-key a] [--partition-by dt] [--buckets N] [--replication N] [--property k=v]... [--if-not-exists]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&schema, "schema", "", "columns: 'id BIGINT NOT NULL, name STRING, amount DECIMAL(10,2)'")
			fs.StringVar(&pk, "primary-key", "", "comma-separated primary-key columns (makes a primary-key table)")
			fs.StringVar(&bk, "bucket-key", "", "comma-separated bucket-key columns")
			fs.StringVar(&partitionBy, "partition-by", "", "comma-separated partition columns (STRING, integer or DATE, NOT NULL; of a primary-key table, key columns): "+
				"each partition has --buckets buckets of its own (docs/partitions.md)")
			rangeVar(fs, &buckets, "buckets", 1, metastate.MaxBuckets, fmt.Sprintf("number of buckets, 1 to %d (default: 3 in a cluster of 3+ tablet nodes, else 1)", metastate.MaxBuckets))
			rangeVar(fs, &replication, "replication", 1, 0, "replication factor, 1 to the number of tablet nodes (default: min(3, tablet nodes))")
			fs.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the table exists")
			fs.Var(props, "property", "table property key=value (repeatable)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			var existed bool
			var warnings []string
			opts := []client.Option{client.Unchanged(&existed), client.Warnings(&warnings)}
			if ifNotExists {
				opts = append(opts, client.IfNotExists())
			}
			spec := client.TableSpec{
				Database: db, Name: name, Schema: schema, PrimaryKey: splitList(pk), BucketKey: splitList(bk),
				Buckets: int32(buckets), Replication: int32(replication), Properties: props, PartitionKeys: splitList(partitionBy),
			}
			t, err := c.Admin().CreateTable(ctx, spec, opts...)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintf(env.stderr, "warning: %s\n", w)
			}
			if existed {
				diffs := specDifferences(spec, t)
				for _, d := range diffs {
					fmt.Fprintf(env.stderr, "warning: table %s.%s already exists and differs from the request: %s\n", db, name, d)
				}
				return printResult(env, cf, t, "table %s.%s already exists\n", db, name)
			}
			if len(t.PartitionKeys) > 0 {
				return printResult(env, cf, t, "created table %s.%s partitioned by %s (%s a partition, replication %d)\n", db, name,
					strings.Join(t.PartitionKeys, ", "), plural(int64(t.Buckets), "bucket"), t.Replication)
			}
			return printResult(env, cf, t, "created table %s.%s (%s, replication %d)\n", db, name, plural(int64(t.Buckets), "bucket"), t.Replication)
		}}
}

func tableDropCmd(env *cliEnv) clientCmd {
	var ifExists bool
	return clientCmd{summary: "drop a table", usage: "table drop DB.TABLE [--if-exists]", nargs: 1, arg: argTable,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&ifExists, "if-exists", false, "succeed if the table does not exist")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			var missing bool
			opts := []client.Option{client.Unchanged(&missing)}
			if ifExists {
				opts = append(opts, client.IfExists())
			}
			if err := c.Admin().DropTable(ctx, db, name, opts...); err != nil {
				return err
			}
			if missing {
				return printResult(env, cf, map[string]any{"dropped": pos[0], "unchanged": true}, "table %s does not exist\n", pos[0])
			}
			return printResult(env, cf, map[string]any{"dropped": pos[0], "unchanged": false}, "dropped table %s\n", pos[0])
		}}
}

func tableListCmd(env *cliEnv) clientCmd {
	return clientCmd{summary: "list a database's tables", usage: "table list DB", nargs: 1, arg: argDatabase,
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			tables, err := c.Admin().ListTables(ctx, pos[0])
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, tables)
			}
			w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tBUCKETS\tREPLICATION")
			for _, t := range tables {
				kind := "log"
				if len(t.PrimaryKey) > 0 {
					kind = "primary-key"
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", t.Name, kind, t.Buckets, t.Replication)
			}
			return w.Flush()
		}}
}

func tableDescribeCmd(env *cliEnv) clientCmd {
	return clientCmd{summary: "show a table's columns, properties and bucket placement", usage: "table describe DB.TABLE", nargs: 1, arg: argTable,
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			t, err := c.Admin().DescribeTable(ctx, db, name)
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, t)
			}
			return printTable(env, t)
		}}
}

func printTable(env *cliEnv, t *client.TableInfo) error {
	w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "table\t%s.%s (id %d, schema %d)\n", t.Database, t.Name, t.ID, t.SchemaID)
	if t.Comment != "" {
		fmt.Fprintf(w, "comment\t%s\n", t.Comment)
	}
	fmt.Fprintf(w, "schema versions\t%s (current %d)\n", joinSchemaIDs(t.SchemaVersions), t.SchemaID)
	if t.LogFormat != "" {
		fmt.Fprintf(w, "log format\t%s, %s level %d\n", t.LogFormat, t.LogCompression, t.LogCompressionLevel)
	}
	fmt.Fprintf(w, "primary key\t%s\n", orNone(strings.Join(t.PrimaryKey, ", ")))
	fmt.Fprintf(w, "bucket key\t%s\n", orNone(strings.Join(t.BucketKey, ", ")))
	if len(t.PartitionKeys) > 0 {
		fmt.Fprintf(w, "partition key\t%s\n", strings.Join(t.PartitionKeys, ", "))
		fmt.Fprintf(w, "buckets\t%d a partition\nreplication\t%d\n", t.Buckets, t.Replication)
	} else {
		fmt.Fprintf(w, "buckets\t%d\nreplication\t%d\n", t.Buckets, t.Replication)
	}
	if t.Unusable != "" {
		fmt.Fprintf(w, "status\tunusable: %s (nodes refuse its reads and writes; drop and recreate it)\n", t.Unusable)
	}
	if t.Invalid != "" {
		fmt.Fprintf(w, "warning\t%s (kept by an older build; table create refuses it now)\n", t.Invalid)
	}
	if l := t.Lake; l != nil {
		committed := "nothing committed yet"
		if l.Version > 0 {
			committed = fmt.Sprintf("version %d, committed %s", l.Version, l.Committed.UTC().Format(time.RFC3339))
		}
		var tasks []string
		for _, task := range l.Tasks {
			tasks = append(tasks, fmt.Sprintf("buckets [%d, %d) on node %d", task.FirstBucket, task.EndBucket, task.Node))
		}
		fmt.Fprintf(w, "lake\t%s, under %s; tasks: %s\n", committed, l.Prefix, orNone(strings.Join(tasks, ", ")))
		if len(t.PartitionKeys) == 0 && len(t.Placement) > 0 {
			var offs []string
			for _, b := range t.Placement {
				offs = append(offs, fmt.Sprintf("%d: %d", b.Bucket, b.LakeOffset))
			}
			fmt.Fprintf(w, "lake holds below\t%s\n", strings.Join(offs, ", "))
		}
	}
	keys := make([]string, 0, len(t.Properties))
	for k := range t.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "property\t%s=%s\n", k, t.Properties[k])
	}
	fmt.Fprintln(w, "\nCOLUMN\tTYPE\tNULLABLE")
	for _, col := range t.Columns {
		fmt.Fprintf(w, "%s\t%s\t%v\n", col.Name, col.Type, col.Nullable)
	}
	if len(t.PartitionKeys) > 0 {
		// The buckets are the partitions': floe table partitions.
		fmt.Fprintf(w, "\npartitions\t%s\n", partitionSummary(t.Partitions))
		return w.Flush()
	}
	fmt.Fprintln(w, "\nBUCKET\tLEADER\tEPOCH\tREPLICAS\tISR\tUNCLEAN ELECTIONS\tSTATUS\tREMOTE\tKV SNAPSHOT")
	for _, b := range t.Placement {
		remote, snap := "-", "-"
		if r := b.Remote; r != nil {
			remote = fmt.Sprintf("[%d, %d) %d segments %d B", r.StartOffset, r.EndOffset, r.Segments, r.Bytes)
		}
		if s := b.Snapshot; s != nil {
			snap = fmt.Sprintf("at %d, %d rows, %s", s.Offset, s.Rows, s.Created.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "%d\t%d\t%d\t%v\t%v\t%d\t%s\t%s\t%s\n", b.Bucket, b.Leader, b.LeaderEpoch, b.Replicas, b.ISR,
			b.UncleanElections, b.Status, remote, snap)
	}
	return w.Flush()
}

// joinSchemaIDs lists schema version ids: "1, 2, 3".
func joinSchemaIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
