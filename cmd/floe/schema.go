package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/floedb/floe/storage/record"
)

func runSchema(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: floe schema check|rows 'SCHEMA'", errUsage)
	}
	switch args[0] {
	case "check":
		return runSchemaCheck(env, args[1:])
	case "rows":
		return runSchemaRows(ctx, env, args[1:])
	default:
		return fmt.Errorf("%w: unknown subcommand %q (want check or rows)", errUsage, args[0])
	}
}

// parseSchemaArgs reads a schema and an optional --primary-key list.
func parseSchemaArgs(env *cliEnv, name, usageLine string, args []string) (record.Schema, *string, error) {
	fs := newFlags(env, name, usageLine)
	pk := fs.String("primary-key", "", "comma-separated primary-key columns")
	output := fs.String("output", "text", "text or json")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return record.Schema{}, nil, err
	}
	if len(pos) != 1 {
		return record.Schema{}, nil, fmt.Errorf("%w: want one schema argument, like 'id BIGINT NOT NULL, name STRING'", errUsage)
	}
	s, err := record.ParseSchema(pos[0])
	if err != nil {
		return record.Schema{}, nil, err
	}
	if *pk != "" {
		if len(s.PrimaryKey) > 0 {
			return record.Schema{}, nil, fmt.Errorf("%w: the schema already declares a primary key", errUsage)
		}
		for _, c := range strings.Split(*pk, ",") {
			s.PrimaryKey = append(s.PrimaryKey, strings.TrimSpace(c))
		}
		if err := s.Validate(); err != nil {
			return record.Schema{}, nil, err
		}
	}
	return s, output, nil
}

// runSchemaCheck parses and validates a schema and prints its canonical form.
func runSchemaCheck(env *cliEnv, args []string) error {
	s, output, err := parseSchemaArgs(env, "schema check", "schema check 'SCHEMA' [--primary-key a,b] [--output text|json]", args)
	if err != nil {
		return err
	}
	if *output == "json" {
		return json.NewEncoder(env.stdout).Encode(s)
	}
	fmt.Fprintln(env.stdout, s.String())
	return nil
}

// runSchemaRows converts JSON lines from stdin to rows and back, printing
// each normalized row, and stops at the first bad line with its number.
func runSchemaRows(ctx context.Context, env *cliEnv, args []string) error {
	s, _, err := parseSchemaArgs(env, "schema rows", "schema rows 'SCHEMA' < rows.jsonl", args)
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
