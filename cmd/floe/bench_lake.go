package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/bench"
)

func benchLakeCmd(env *cliEnv) clientCmd {
	o := bench.LakeOptions{}
	var buckets int
	return clientCmd{summary: "lake freshness: how long after a write the lake holds it, at a steady rate", streaming: true,
		usage: "bench lake [--table DB.TABLE] [--freshness 10s] [--duration 60s] [--rate 20000] [--buckets N] [--wait D]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Table, "table", "bench.lake", "DB.TABLE to write; created lake-enabled with the clickstream schema if missing (the nodes need a remote store: --s3-* or --remote-dir)")
			fs.DurationVar(&o.Freshness, "freshness", 10*time.Second, "the table's datalake.freshness, set before the writes")
			fs.DurationVar(&o.Duration, "duration", time.Minute, "how long to write")
			fs.Float64Var(&o.Rate, "rate", 20000, "events a second")
			fs.IntVar(&buckets, "buckets", 0, "buckets of a table the benchmark creates (0: the cluster's default)")
			fs.DurationVar(&o.Wait, "wait", 0, "how long to wait for the lake after the writes (0: the freshness and a minute)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			switch {
			case o.Freshness < time.Second:
				return fmt.Errorf("%w: --freshness must be at least 1s", errUsage)
			case o.Duration <= 0:
				return fmt.Errorf("%w: --duration must be positive", errUsage)
			case o.Rate <= 0 || o.Rate > 1e8:
				return fmt.Errorf("%w: --rate must be in (0, 1e8]", errUsage)
			case buckets < 0:
				return fmt.Errorf("%w: --buckets must not be negative", errUsage)
			}
			o.Buckets = int32(buckets)
			if _, _, err := tableName(o.Table); err != nil {
				return err
			}
			res, err := bench.Lake(ctx, c, &o, cf.timeout, func(s string) { fmt.Fprintln(env.stderr, s) })
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench lake: %s at %.0f events/s for %s (delay: a moment of the writes to the lake holding every record before it)",
				o.Table, o.Rate, o.Duration)
			return bench.PrintLake(env.stdout, title, res, cf.output == "json")
		}}
}
