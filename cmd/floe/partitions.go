package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/dataio"
)

// partitionRanges finds the partitions of a partitioned table that a read
// covers and where their buckets' reads start and end; with follow, it
// looks again now and then for partitions created since.
type partitionRanges struct {
	tbl     *client.Table
	match   func(client.PartitionInfo) bool
	buckets []int32
	from    client.StartPosition
	follow  bool
	timeout time.Duration

	seen     map[uint64]bool // partitions whose ranges were handed out
	lastLook time.Time
}

// partitionRescan is how often a follower looks for new partitions.
const partitionRescan = time.Second

func newPartitionRanges(tbl *client.Table, filters []string, buckets []int32, from client.StartPosition, follow bool,
	timeout time.Duration) (*partitionRanges, error) {
	match, err := tbl.PartitionFilter(filters)
	if err != nil {
		return nil, fmt.Errorf("%w: --partition: %v", errUsage, err)
	}
	return &partitionRanges{tbl: tbl, match: match, buckets: buckets, from: from, follow: follow, timeout: timeout,
		seen: map[uint64]bool{}}, nil
}

// next returns the ranges of the matching partitions not handed out yet:
// read from the start position asked, or, for a partition created after
// the first look, from its start (every record in it is new).
func (p *partitionRanges) next(ctx context.Context) ([]dataio.BucketRange, error) {
	first := p.lastLook.IsZero()
	p.lastLook = time.Now()
	lctx, cancel := context.WithTimeout(ctx, p.timeout)
	parts, err := p.tbl.Partitions(lctx)
	cancel()
	if err != nil {
		return nil, err
	}
	var out []dataio.BucketRange
	for _, info := range parts {
		if p.seen[info.ID] || !p.match(info) {
			continue
		}
		pt, err := p.tbl.Partition(ctx, info.Name)
		if err != nil {
			if !first && errors.Is(err, client.ErrUnknownPartition) {
				continue // dropped since it was listed
			}
			return nil, err
		}
		from := p.from
		if !first {
			from = client.Earliest()
		}
		ranges, err := dataio.ResolveRanges(ctx, pt, p.buckets, from, p.follow, p.timeout)
		if err != nil {
			return nil, err
		}
		p.seen[info.ID] = true
		out = append(out, ranges...)
	}
	return out, nil
}

// more is next at most once a partitionRescan, for PollOptions.More.
func (p *partitionRanges) more(ctx context.Context) ([]dataio.BucketRange, error) {
	if time.Since(p.lastLook) < partitionRescan {
		return nil, nil
	}
	return p.next(ctx)
}

// partitionSummary says how many partitions a table has and which are the
// first and last by name: "365 (dt=2025-12-04 to dt=2026-12-03)".
func partitionSummary(parts []client.PartitionInfo) string {
	switch len(parts) {
	case 0:
		return "none yet (writers create them, or floe table partition add)"
	case 1:
		return "1 (" + parts[0].Name + ")"
	}
	return fmt.Sprintf("%d (%s to %s); floe table partitions lists them", len(parts), parts[0].Name, parts[len(parts)-1].Name)
}

func tablePartitionsCmd(env *cliEnv) clientCmd {
	var filters stringList
	return clientCmd{summary: "list a partitioned table's partitions with the state of their buckets", nargs: 1, arg: argTable,
		usage: "table partitions DB.TABLE [--partition dt>=X]...",
		flags: func(fs *flag.FlagSet) {
			fs.Var(&filters, "partition", "only the partitions that pass: dt=2026-12-03, 'dt>=2026-12-01', conditions joined by / (repeatable: any of them)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			tbl, err := openTable(ctx, c, cf, pos[0])
			if err != nil {
				return err
			}
			if !tbl.Partitioned() {
				return fmt.Errorf("%w: %s is not partitioned", errUsage, pos[0])
			}
			match, err := tbl.PartitionFilter(filters)
			if err != nil {
				return fmt.Errorf("%w: --partition: %v", errUsage, err)
			}
			info := tbl.Info()
			all, err := c.Admin().ListPartitions(ctx, info.Database, info.Name)
			if err != nil {
				return err
			}
			parts := make([]client.PartitionInfo, 0, len(all))
			for _, p := range all {
				if match(p) {
					parts = append(parts, p)
				}
			}
			if cf.output == "json" {
				return printJSON(env, parts)
			}
			w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "PARTITION\tID\tORIGIN\tCREATED\tBUCKETS\tIN SYNC\tOFFLINE\tREMOTE BYTES")
			for _, p := range parts {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", p.Name, p.ID, p.Origin, p.CreatedAt.UTC().Format(time.RFC3339),
					p.Buckets, p.InSync, p.Offline, p.RemoteBytes)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(parts) < len(all) {
				fmt.Fprintf(env.stderr, "%d of %s\n", len(parts), plural(int64(len(all)), "partition"))
			}
			return nil
		}}
}

func tablePartitionCmd(env *cliEnv) clientCmd {
	var partition string
	var ifNotExists, ifExists bool
	return clientCmd{summary: "add a partition to a partitioned table, or drop one with its data", nargs: 2,
		usage: "table partition add|drop DB.TABLE --partition dt=2026-12-03 [--if-not-exists] [--if-exists]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&partition, "partition", "", "the partition: dt=2026-12-03, or region=eu/dt=2026-12-03 (or the bare value with one partition column)")
			fs.BoolVar(&ifNotExists, "if-not-exists", false, "add: succeed if the partition exists")
			fs.BoolVar(&ifExists, "if-exists", false, "drop: succeed if the partition does not exist")
		},
		check: func(pos []string) error {
			switch {
			case pos[0] != "add" && pos[0] != "drop":
				return fmt.Errorf("%w: %q: want add or drop", errUsage, pos[0])
			case partition == "":
				return fmt.Errorf("%w: --partition is required (dt=2026-12-03)", errUsage)
			case pos[0] == "add" && ifExists, pos[0] == "drop" && ifNotExists:
				return fmt.Errorf("%w: --if-exists goes with drop, --if-not-exists with add", errUsage)
			}
			_, _, err := tableName(pos[1])
			return err
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, _ := tableName(pos[1])
			var unchanged bool
			opts := []client.Option{client.Unchanged(&unchanged)}
			if pos[0] == "drop" {
				if ifExists {
					opts = append(opts, client.IfExists())
				}
				if err := c.Admin().DropPartition(ctx, db, name, partition, opts...); err != nil {
					return err
				}
				out := map[string]any{"table": pos[1], "dropped": partition, "unchanged": unchanged}
				if unchanged {
					return printResult(env, cf, out, "partition %s of %s does not exist\n", partition, pos[1])
				}
				return printResult(env, cf, out, "dropped partition %s of %s with its data\n", partition, pos[1])
			}
			if ifNotExists {
				opts = append(opts, client.IfNotExists())
			}
			p, err := c.Admin().CreatePartition(ctx, db, name, partition, opts...)
			if err != nil {
				return err
			}
			if unchanged {
				return printResult(env, cf, p, "partition %s of %s already exists (id %d)\n", p.Name, pos[1], p.ID)
			}
			return printResult(env, cf, p, "added partition %s to %s (id %d)\n", p.Name, pos[1], p.ID)
		}}
}

// partitionHandles opens the partitions of a partitioned table that the
// filters pass (all without filters), in name order.
func partitionHandles(ctx context.Context, tbl *client.Table, filters []string, timeout time.Duration) ([]*client.Table, error) {
	match, err := tbl.PartitionFilter(filters)
	if err != nil {
		return nil, fmt.Errorf("%w: --partition: %v", errUsage, err)
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	parts, err := tbl.Partitions(lctx)
	cancel()
	if err != nil {
		return nil, err
	}
	var out []*client.Table
	for _, p := range parts {
		if !match(p) {
			continue
		}
		h, err := tbl.Partition(ctx, p.Name)
		if errors.Is(err, client.ErrUnknownPartition) {
			continue // dropped since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}
