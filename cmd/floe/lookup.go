package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/dataio"
	"github.com/floedb/floe/storage/record"
)

// lookupBatchKeys is how many stdin keys go into one LookupBatch.
const lookupBatchKeys = 256

// errNotFound fails a lookup that found no row for some key.
var errNotFound = errors.New("not found")

// lookupOptions are the flags of floe lookup.
type lookupOptions struct {
	key, prefix  string
	linearizable bool
}

// lookupCmd prints rows of a primary-key table as JSON lines: the row of
// --key, the rows of the --prefix bucket key, or the rows of the key
// objects read from stdin.
func lookupCmd(env *cliEnv) clientCmd {
	var o lookupOptions
	return clientCmd{summary: "read rows of a primary-key table by key or bucket-key prefix", nargs: 1, streaming: true, arg: argTable,
		usage: "lookup DB.TABLE [--key '{\"id\":1}' | --prefix '{\"a\":1}'] [--linearizable]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.key, "key", "", "the primary key as a JSON object; without --key or --prefix, one key object per stdin line")
			fs.StringVar(&o.prefix, "prefix", "", "a bucket key as a JSON object: print every row with it (bucket key a strict prefix of the primary key)")
			fs.BoolVar(&o.linearizable, "linearizable", false, "answer only with every write acknowledged before the lookup applied")
		},
		check: func(pos []string) error {
			if o.key != "" && o.prefix != "" {
				return fmt.Errorf("%w: --key and --prefix exclude each other", errUsage)
			}
			return nil
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			tbl, err := openTable(ctx, c, cf, pos[0])
			if err != nil {
				return err
			}
			l, err := tbl.NewLookuper(client.LookuperOptions{Linearizable: o.linearizable, Timeout: cf.timeout})
			if err != nil {
				return keyInputError(tbl, "key", nil, err)
			}
			defer l.Close()
			out := bufio.NewWriterSize(env.stdout, 64<<10)
			defer out.Flush()
			p := rowPrinter{out: out, codec: tbl.JSONCodec()}
			switch {
			case o.key != "":
				row, found, err := l.LookupJSON(ctx, []byte(o.key))
				if err != nil {
					return fmt.Errorf("--key: %w", keyInputError(tbl, "key", tbl.Info().PrimaryKey, err))
				}
				if !found {
					return fmt.Errorf("key %s: %w", o.key, errNotFound)
				}
				return p.print(row)
			case o.prefix != "":
				rows, err := l.PrefixLookupJSON(ctx, []byte(o.prefix))
				for _, row := range rows {
					if perr := p.print(row); perr != nil {
						return perr
					}
				}
				if err != nil {
					return fmt.Errorf("--prefix: %w", keyInputError(tbl, "bucket key", tbl.Info().BucketKey, err))
				}
				if len(rows) == 0 {
					return fmt.Errorf("no row with bucket key %s: %w", o.prefix, errNotFound)
				}
				return nil
			}
			return lookupLines(ctx, l, tbl, dataio.Interruptible(ctx, env.stdin), p)
		}}
}

// keyInputErrors are the errors of a key (or bucket key) object, or of a
// lookup the table cannot answer, that keyInputError makes usage mistakes.
var keyInputErrors = []error{
	record.ErrInvalidJSON, record.ErrUnknownColumn, record.ErrDuplicateColumn, record.ErrWrongType,
	record.ErrNullNotAllowed, record.ErrOverflow, record.ErrInvalidUTF8, record.ErrInvalidValue,
	client.ErrNotPrimaryKeyTable, client.ErrNoPrefixLookup,
}

// keyInputError makes err a usage mistake (exit 2) when it is about the
// key objects given or the kind of table, so that exit 1 means an absent
// key; a column of the table outside key (the columns the objects may
// give, named by keyName) is named as such.
func keyInputError(tbl *client.Table, keyName string, key []string, err error) error {
	if !slices.ContainsFunc(keyInputErrors, func(target error) bool { return errors.Is(err, target) }) {
		return err
	}
	var col *record.ColumnError
	if errors.As(err, &col) && errors.Is(err, record.ErrUnknownColumn) {
		what := "no column of the table"
		if _, ok := tbl.Schema().ColumnIndex(col.Column); ok {
			what = "not a " + keyName + " column"
		}
		return usageError{fmt.Errorf("column %q is %s (the %s is %s)", col.Column, what, keyName, strings.Join(key, ", "))}
	}
	return usageError{err}
}

// rowPrinter writes rows as JSON lines.
type rowPrinter struct {
	out   *bufio.Writer
	codec *record.JSONCodec
	line  []byte
}

func (p *rowPrinter) print(row []byte) error {
	line, err := p.codec.AppendJSON(p.line[:0], row)
	if err != nil {
		return err
	}
	p.line = append(line, '\n')
	_, err = p.out.Write(p.line)
	return err
}

// lookupLines looks up the key object of every non-blank line of in, in
// batches, and prints the rows found in input order. A bad line stops the
// run with its number; keys not found make the run fail at the end.
func lookupLines(ctx context.Context, l *client.Lookuper, tbl *client.Table, in io.Reader, p rowPrinter) error {
	codec, err := record.NewJSONCodec(tbl.PrimaryKeySchema())
	if err != nil {
		return err
	}
	var keys [][]byte
	var lines []string // the input line of each key in keys: "line N {...}"
	var missing []string
	var missed int64
	line := 0
	flushKeys := func() error {
		if len(keys) == 0 {
			return nil
		}
		rows, err := l.LookupBatch(ctx, keys)
		if err != nil {
			return err
		}
		for i, row := range rows {
			if row == nil {
				if missed++; len(missing) < maxMissingNamed {
					missing = append(missing, lines[i])
				}
				continue
			}
			if err := p.print(row); err != nil {
				return err
			}
		}
		return p.out.Flush()
	}
	_, readErr := dataio.EachLine(ctx, in, func(_ context.Context, object []byte) error {
		line++
		key, err := codec.AppendRow(nil, object)
		if err != nil {
			return keyInputError(tbl, "key", tbl.Info().PrimaryKey, err)
		}
		keys = append(keys, key)
		lines = append(lines, string(bytes.TrimSpace(object)))
		if len(keys) == lookupBatchKeys {
			err := flushKeys()
			keys, lines = keys[:0], lines[:0]
			return err
		}
		return nil
	})
	if errors.Is(readErr, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted
	}
	if err := flushKeys(); err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	if missed > 0 {
		named := strings.Join(missing, ", ")
		if more := missed - int64(len(missing)); more > 0 {
			named += fmt.Sprintf(" and %d more", more)
		}
		return fmt.Errorf("%s: %w: %s", plural(missed, "key"), errNotFound, named)
	}
	return nil
}

// maxMissingNamed bounds how many keys a failed batched lookup names.
const maxMissingNamed = 10
