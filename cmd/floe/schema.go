package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/floedb/floe/storage/record"
)

// schemaSpecs are the subcommands of floe schema.
func schemaSpecs(env *cliEnv) []cmdSpec {
	return []cmdSpec{
		{usage: "schema check 'SCHEMA' [--primary-key a,b] [--output text|json]",
			summary: "parse and validate a schema and print its canonical form",
			define: func(fs *flag.FlagSet) runFunc {
				sf := addSchemaFlags(fs)
				return func(_ context.Context, pos []string) error { return runSchemaCheck(env, sf, pos) }
			}},
		{usage: "schema rows 'SCHEMA' < rows.jsonl",
			summary: "convert JSON lines from stdin to rows and back, stopping at the first bad line",
			define: func(fs *flag.FlagSet) runFunc {
				sf := addSchemaFlags(fs)
				return func(ctx context.Context, pos []string) error { return runSchemaRows(ctx, env, sf, pos) }
			}},
	}
}

// schemaFlags are the flags of the schema commands.
type schemaFlags struct {
	primaryKey, output string
}

func addSchemaFlags(fs *flag.FlagSet) *schemaFlags {
	f := &schemaFlags{}
	fs.StringVar(&f.primaryKey, "primary-key", "", "comma-separated primary-key columns")
	outputVar(fs, &f.output, "")
	return f
}

// parseSchemaArg reads the schema argument and the --primary-key list.
func parseSchemaArg(f *schemaFlags, pos []string) (record.Schema, error) {
	pk := &f.primaryKey
	if len(pos) != 1 {
		return record.Schema{}, fmt.Errorf("%w: want one schema argument, like 'id BIGINT NOT NULL, name STRING'", errUsage)
	}
	s, err := record.ParseSchema(pos[0])
	if err != nil {
		return record.Schema{}, err
	}
	if *pk != "" {
		if len(s.PrimaryKey) > 0 {
			return record.Schema{}, fmt.Errorf("%w: the schema already declares a primary key", errUsage)
		}
		for _, c := range strings.Split(*pk, ",") {
			s.PrimaryKey = append(s.PrimaryKey, strings.TrimSpace(c))
		}
		if err := s.Validate(); err != nil {
			return record.Schema{}, err
		}
	}
	return s, nil
}

// runSchemaCheck parses and validates a schema and prints its canonical form.
func runSchemaCheck(env *cliEnv, f *schemaFlags, pos []string) error {
	s, err := parseSchemaArg(f, pos)
	if err != nil {
		return err
	}
	if f.output == "json" {
		return json.NewEncoder(env.stdout).Encode(s)
	}
	fmt.Fprintln(env.stdout, s.String())
	return nil
}

// runSchemaRows converts JSON lines from stdin to rows and back, printing
// each normalized row, and stops at the first bad line with its number.
func runSchemaRows(ctx context.Context, env *cliEnv, f *schemaFlags, pos []string) error {
	s, err := parseSchemaArg(f, pos)
	if err != nil {
		return err
	}
	codec, err := record.NewJSONCodec(s)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(env.stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	out := bufio.NewWriter(env.stdout)
	defer out.Flush()
	var row, line []byte
	for n := 1; sc.Scan(); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if row, err = codec.AppendRow(row[:0], sc.Bytes()); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if line, err = codec.AppendJSON(line[:0], row); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return sc.Err()
}
