package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/bench"
)

func benchPartitionsCmd(env *cliEnv) clientCmd {
	o := bench.PartitionsOptions{}
	var nodePIDs string
	return clientCmd{summary: "what a year of daily partitions costs: partition create latency, DDL beside them, a new consumer of the newest, the nodes idle",
		streaming: true,
		usage:     "bench partitions [--table DB.TABLE] [--partitions 365] [--buckets 8] [--replication 3] [--idle 30s] [--node-pids P,P,P]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Table, "table", "bench.daily", "DB.TABLE to create, partitioned by day ('"+bench.PartitionsSchema+"'); it must not exist")
			fs.IntVar(&o.Partitions, "partitions", 365, "partitions to create, one a day")
			fs.IntVar(&o.Buckets, "buckets", 8, "buckets of each partition")
			fs.IntVar(&o.Replication, "replication", 3, "replication of the table")
			fs.DurationVar(&o.Idle, "idle", 30*time.Second, "window over which the nodes' CPU is measured once every partition serves")
			fs.StringVar(&nodePIDs, "node-pids", "", "comma-separated process ids of the nodes, when they run on this machine: their idle CPU, memory and descriptors")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if o.Partitions < 1 || o.Partitions > 10_000 || o.Buckets < 1 || o.Replication < 1 {
				return fmt.Errorf("%w: --partitions 1 to 10000, --buckets and --replication at least 1", errUsage)
			}
			var err error
			if o.NodePIDs, err = bench.ParseNodePIDs(nodePIDs); err != nil {
				return fmt.Errorf("%w: --node-pids: %v", errUsage, err)
			}
			o.Timeout = max(cf.timeout, 5*time.Minute)
			o.Connect = func(ctx context.Context) (*client.Client, error) {
				c, _, cancel, err := cf.connect(ctx)
				if cancel != nil {
					cancel()
				}
				return c, err
			}
			res, err := bench.Partitions(ctx, c, &o, env.stderr)
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, res)
			}
			return bench.PrintPartitionsResult(env.stdout, res)
		}}
}
