package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// tableElectCmd is `floe table elect`: an operator's election of bucket
// leaders, clean or (with --unclean) from outside the ISR.
func tableElectCmd(env *cliEnv) clientCmd {
	var bucket int
	var unclean bool
	var partition string
	return clientCmd{summary: "elect bucket leaders, clean or (--unclean) from outside the ISR", usage: "table elect DB.TABLE [--partition dt=X] [--bucket N] [--unclean]", nargs: 1, arg: argTable,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&bucket, "bucket", -1, "elect only this bucket (default: every bucket)")
			fs.StringVar(&partition, "partition", "", "of a partitioned table, the partition whose buckets to elect (dt=2026-12-03)")
			fs.BoolVar(&unclean, "unclean", false,
				"let a bucket without a live in-sync replica take the live replica holding the most (latest epoch, then longest log) as leader (loses what only the ISR held)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			opts := client.ElectOptions{Unclean: unclean, Partition: partition}
			if bucket >= 0 {
				b := int32(bucket)
				opts.Bucket = &b
			}
			elections, err := c.Admin().ElectLeaders(ctx, db, name, opts)
			if errors.Is(err, transport.ErrAlreadyExists) {
				// Every bucket asked is led by its first live in-sync
				// replica already: what the operator wanted holds.
				if cf.output == "json" {
					return printJSON(env, []client.Election{})
				}
				why := fmt.Sprintf("every bucket of %s.%s is already led by its first live in-sync replica", db, name)
				var te *transport.Error
				if opts.Bucket != nil && errors.As(err, &te) {
					why = cliMessage(errors.New(te.Message))
				}
				fmt.Fprintf(env.stdout, "nothing to do: %s\n", why)
				return nil
			}
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, elections)
			}
			for _, e := range elections {
				b := e.Bucket
				switch {
				case e.Unclean:
					fmt.Fprintf(env.stdout, "bucket %d: leader %d, epoch %d (unclean election %d: it was not in sync)\n  chosen by log: %s\n",
						b.Bucket, b.Leader, b.LeaderEpoch, b.UncleanElections, e.Why())
				case e.Elected:
					fmt.Fprintf(env.stdout, "bucket %d: leader %d, epoch %d\n", b.Bucket, b.Leader, b.LeaderEpoch)
				default:
					fmt.Fprintf(env.stdout, "bucket %d: unchanged: %v\n", b.Bucket, e.Err)
				}
			}
			return nil
		}}
}
