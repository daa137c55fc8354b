package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/fanout"
)

// tableSnapshotCmd takes a KV snapshot of every bucket of a primary-key
// table now.
func tableSnapshotCmd(env *cliEnv) clientCmd {
	var concurrency int
	return clientCmd{summary: "take a KV snapshot of a primary-key table now", usage: "table snapshot DB.TABLE [--concurrency 4]", nargs: 1, arg: argTable,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&concurrency, "concurrency", 4, "buckets snapshotted at once (each on its leader, one at a time per node)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			if concurrency < 1 {
				return fmt.Errorf("%w: --concurrency must be at least 1", errUsage)
			}
			tbl, err := c.Table(ctx, db, name)
			if err != nil {
				return err
			}
			out := make([]client.KVSnapshot, tbl.Buckets())
			buckets := make([]int32, len(out))
			for b := range buckets {
				buckets[b] = int32(b)
			}
			err = fanout.FirstError(ctx, buckets, concurrency, func(ctx context.Context, b int32) (err error) {
				out[b], err = tbl.SnapshotKV(ctx, b)
				return err
			})
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, out)
			}
			w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "BUCKET\tOFFSET\tROWS\tBYTES\tPARTS\tREUSED\tUPLOADED")
			for _, s := range out {
				fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Bucket, s.Offset, s.Rows, s.Bytes, s.Parts, s.ReusedParts, s.UploadedBytes)
			}
			return w.Flush()
		}}
}
