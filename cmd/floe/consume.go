package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/dataio"
	"github.com/floedb/floe/storage/record"
)

// consumeOptions are the flags of floe consume.
type consumeOptions struct {
	from    client.StartPosition
	limit   int64 // 0: no limit
	follow  bool
	buckets []int32  // nil: all
	noMeta  bool     // no _bucket, _offset, _timestamp: the row's columns, and a changelog's _change
	columns []string // nil: all
	// partitions filter a partitioned table's partitions (nil: all).
	partitions []string
}

// consumeCmd prints a log table's rows, or a primary-key table's
// changelog, as JSON lines.
func consumeCmd(env *cliEnv) clientCmd {
	var from, buckets, columns string
	var o consumeOptions
	var partitions stringList
	return clientCmd{summary: "print a table's rows (a primary-key table's changelog) as JSON lines", nargs: 1, streaming: true, arg: argTable,
		usage: "consume DB.TABLE [--from earliest|earliest-in-log|latest|offset=N|timestamp=T] [--limit N] [--follow] [--buckets 0,2] [--columns a,b] [--partition dt=X]... [--no-meta]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&from, "from", "earliest", "where to start: earliest (a lake-enabled table's lake first, then its log), earliest-in-log, latest, offset=N or timestamp=T (RFC 3339, a date, or epoch milliseconds)")
			fs.Int64Var(&o.limit, "limit", 0, "stop after this many rows (0: no limit)")
			fs.BoolVar(&o.follow, "follow", false, "keep reading new rows; without it, stop at the high watermark seen at start")
			fs.StringVar(&buckets, "buckets", "", "comma-separated buckets to read (default: all)")
			fs.StringVar(&columns, "columns", "", "comma-separated columns to print, in that order (default: all); the nodes send only these columns of arrow-format batches")
			fs.Var(&partitions, "partition", "of a partitioned table, the partitions to read: dt=2026-12-03, a range such as 'dt>=2026-12-01', "+
				"or conditions joined by / (repeat the flag for more; default: every partition, and with --follow the ones created while it runs)")
			fs.BoolVar(&o.noMeta, "no-meta", false, "print the row's columns without _bucket, _offset and _timestamp (a primary-key table's changelog keeps _change, which says whether the row was written or deleted): lines that floe produce takes back and applies")
		},
		check: func(pos []string) error {
			var err error
			if o.from, err = parseFrom(from); err != nil {
				return err
			}
			if o.limit < 0 {
				return fmt.Errorf("%w: --limit must not be negative", errUsage)
			}
			o.columns = parseColumns(columns)
			o.partitions = partitions
			o.buckets, err = parseBuckets(buckets)
			return err
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			tbl, err := openTable(ctx, c, cf, pos[0])
			if err != nil {
				return err
			}
			return consume(ctx, env, cf, tbl, o)
		}}
}

// parseFrom reads --from.
func parseFrom(s string) (client.StartPosition, error) {
	switch {
	case s == "earliest":
		return client.Earliest(), nil
	case s == "earliest-in-log":
		return client.EarliestInLog(), nil
	case s == "latest":
		return client.Latest(), nil
	case strings.HasPrefix(s, "offset="):
		n, err := strconv.ParseInt(strings.TrimPrefix(s, "offset="), 10, 64)
		if err != nil || n < 0 {
			return client.StartPosition{}, fmt.Errorf("%w: --from %s: want offset=N with N ≥ 0", errUsage, s)
		}
		return client.AtOffset(n), nil
	case strings.HasPrefix(s, "timestamp="):
		t, err := parseTimestamp(strings.TrimPrefix(s, "timestamp="))
		if err != nil {
			return client.StartPosition{}, fmt.Errorf("%w: --from %s: %v", errUsage, s, err)
		}
		return client.AtTimestamp(t), nil
	}
	return client.StartPosition{}, fmt.Errorf("%w: --from %q: want earliest, earliest-in-log, latest, offset=N or timestamp=RFC3339", errUsage, s)
}

// parseTimestamp reads a --from timestamp: RFC 3339 (with or without
// fractional seconds), a date and time without a zone (UTC), a date (its
// midnight, UTC), or milliseconds since the Unix epoch.
func parseTimestamp(v string) (time.Time, error) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, fmt.Errorf("epoch milliseconds must not be negative")
		}
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time (2026-12-01T10:00:00Z), a date (2026-12-01, UTC) or epoch milliseconds")
}

// consume prints rows of the chosen buckets until the limit, the high
// watermarks seen at start (without follow), or an interrupt (with follow).
func consume(ctx context.Context, env *cliEnv, cf *clientFlags, tbl *client.Table, o consumeOptions) error {
	buckets, err := tableBuckets(tbl, o.buckets)
	if err != nil {
		return err
	}
	if len(o.partitions) > 0 && !tbl.Partitioned() {
		info := tbl.Info()
		return fmt.Errorf("%w: --partition: %s.%s is not partitioned", errUsage, info.Database, info.Name)
	}
	warnReservedColumns(env, tbl.Info())
	s, err := tbl.NewLogScanner(client.LogScannerOptions{Columns: o.columns})
	if err != nil {
		return err
	}
	defer s.Close()
	codec, err := record.NewJSONCodec(s.Schema())
	if err != nil {
		return err
	}
	// Where each bucket starts and, without follow, where it ends, before
	// reading anything.
	var ranges []dataio.BucketRange
	poll := dataio.PollOptions{Follow: o.follow}
	if tbl.Partitioned() {
		parts, err := newPartitionRanges(tbl, o.partitions, buckets, o.from, o.follow, cf.timeout)
		if err != nil {
			return err
		}
		if ranges, err = parts.next(ctx); err != nil {
			return err
		}
		if o.follow {
			poll.More = parts.more
		}
	} else if ranges, err = dataio.ResolveRanges(ctx, tbl, buckets, o.from, o.follow, cf.timeout); err != nil {
		return err
	}
	out := bufio.NewWriterSize(env.stdout, 64<<10)
	defer out.Flush()
	changelog := len(tbl.Info().PrimaryKey) > 0
	var line []byte
	var printed int64
	err = dataio.PollRanges(ctx, s, ranges, poll, func(r client.ScanRecord) error {
		var err error
		if o.noMeta {
			line, err = dataio.AppendNoMetaJSON(line[:0], codec, r, changelog)
		} else {
			line, err = dataio.AppendRecordJSON(line[:0], codec, r, changelog)
		}
		if err != nil {
			return fmt.Errorf("%s bucket %d offset %d: %w", r.Partition, r.Bucket, r.Offset, err)
		}
		if _, err := out.Write(line); err != nil {
			return err
		}
		if printed++; o.limit > 0 && printed >= o.limit {
			return dataio.ErrStopPoll
		}
		return nil
	}, out.Flush)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// warnReservedColumns warns of columns named like the fields consume adds.
func warnReservedColumns(env *cliEnv, info client.TableInfo) {
	for _, c := range info.Columns {
		if isConsumeField(c.Name) {
			// Tables created before the _ prefix was reserved.
			fmt.Fprintf(env.stderr, "warning: column %s of %s.%s has the name of a field consume adds; each line holds the key twice and JSON parsers keep consume's (the last)\n",
				c.Name, info.Database, info.Name)
		}
	}
}

// isConsumeField says whether name is one of the fields appendRecordJSON
// adds to each row; column names starting with _ are reserved for them.
func isConsumeField(name string) bool {
	switch name {
	case "_bucket", "_offset", "_timestamp", "_change":
		return true
	}
	return false
}

// parseColumns reads a --columns list: names separated by commas, blanks
// ignored; nil for none (every column). The table checks the names.
func parseColumns(list string) []string {
	var out []string
	for name := range strings.SplitSeq(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}
