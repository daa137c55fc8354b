package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/floedb/floe/client"
)

// errNotDrained: `node drain` left leaderships on the node.
var errNotDrained = errors.New("leaderships not moved")

// nodeCmds are the subcommands of floe node.
func nodeCmds(env *cliEnv) []clientCmd {
	var force bool
	return []clientCmd{
		{usage: "node drain ID [--force]", summary: "move every bucket leadership off a tablet node before a planned stop", nargs: 1,
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&force, "force", false, "exit 0 even when some leaderships could not move "+
					"(their buckets have no other live in-sync replica and go offline when the node stops)")
			},
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				id, err := nodeID(pos[0])
				if err != nil {
					return err
				}
				res, err := c.Admin().DrainNode(ctx, id)
				if err != nil {
					return err
				}
				if err := printDrain(env, cf, id, res); err != nil {
					return err
				}
				// The drain moves bucket leaderships only; stopping the
				// metadata leader also costs an election of the controller.
				if st, err := c.Admin().ClusterStatus(ctx); err == nil && st.Leader == id {
					fmt.Fprintf(env.stderr, "note: node %d also leads the metadata; `floe cluster transfer-leadership` "+
						"moves that before the stop\n", id)
				}
				if n := res.NotMoved(); n > 0 && !force {
					return fmt.Errorf("node %d: %w: %d of %d (no other live in-sync replica); stopping it takes them offline, "+
						"--force to accept that", id, errNotDrained, n, len(res.Buckets))
				}
				return nil
			}},
		nodeDecommissionCmd(env),
		{usage: "node undrain ID", summary: "clear a node's draining or decommissioning mark (leaderships and replicas stay where they are)", nargs: 1,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				id, err := nodeID(pos[0])
				if err != nil {
					return err
				}
				res, err := c.Admin().UndrainNode(ctx, id)
				if err != nil {
					return err
				}
				if res.Unchanged {
					return printResult(env, cf, res, "node %d was not draining\n", id)
				}
				return printResult(env, cf, res, "node %d is no longer draining; `floe table elect DB.TABLE` moves leaderships back to preferred replicas\n", id)
			}},
		{usage: "node remove ID", summary: "forget a node that is gone for good: its registration, metadata vote and replicas", nargs: 1,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				id, err := nodeID(pos[0])
				if err != nil {
					return err
				}
				res, err := c.Admin().RemoveNode(ctx, id)
				if err != nil {
					return err
				}
				return printRemoval(env, cf, id, res)
			}},
	}
}

// printDrain prints what a drain did: a line per bucket the node led,
// then a summary.
func printDrain(env *cliEnv, cf *clientFlags, id uint32, res *client.DrainResult) error {
	if cf.output == "json" {
		return printJSON(env, res)
	}
	moved := 0
	for _, e := range res.Buckets {
		b := e.Bucket
		name := e.Database + "." + e.Table
		if e.Table == "" {
			name = "(dropped table)"
		}
		if e.Moved {
			moved++
			fmt.Fprintf(env.stdout, "%s bucket %d: moved to node %d (leader epoch %d)\n", name, b.Bucket, b.Leader, b.LeaderEpoch)
		} else {
			fmt.Fprintf(env.stdout, "%s bucket %d: not moved: %s\n", name, b.Bucket, cliMessage(e.Err))
		}
	}
	left := len(res.Buckets) - moved
	switch {
	case len(res.Buckets) == 0:
		fmt.Fprintf(env.stdout, "node %d is draining: it leads no bucket\n", id)
	case left == 0:
		fmt.Fprintf(env.stdout, "node %d is draining: %d leaderships moved, it leads no bucket\n", id, moved)
	default:
		fmt.Fprintf(env.stdout, "node %d is draining: %d leaderships moved, %d not moved\n", id, moved, left)
	}
	return nil
}

// printRemoval prints what a node removal did: a line per bucket the node
// was a replica of, then a summary that names the under-replicated ones.
func printRemoval(env *cliEnv, cf *clientFlags, id uint32, res *client.RemoveResult) error {
	if cf.output == "json" {
		return printJSON(env, res)
	}
	for _, r := range res.Buckets {
		b := r.Bucket
		name := r.Database + "." + r.Table
		if r.Table == "" {
			name = "(dropped table)"
		}
		state := fmt.Sprintf("leader %d", b.Leader)
		if b.Leader == 0 {
			state = "offline until an in-sync replica is back"
		}
		note := ""
		if r.UnderReplicated {
			note = ", under-replicated"
		}
		fmt.Fprintf(env.stdout, "%s bucket %d: replicas %s of replication %d, ISR %s, %s%s\n",
			name, b.Bucket, joinIDs(b.Replicas), r.Replication, joinIDs(b.ISR), state, note)
	}
	var what []string
	if res.Node != nil {
		what = append(what, "its registration")
	}
	if res.LeftRaft {
		what = append(what, "its metadata Raft membership")
	}
	what = append(what, plural(int64(len(res.Buckets)), "replica"))
	fmt.Fprintf(env.stdout, "node %d removed: %s\n", id, strings.Join(what, ", "))
	if n := res.UnderReplicated(); n > 0 {
		fmt.Fprintf(env.stdout, "%s under-replicated: the controller places new replicas on the other live nodes, copied from "+
			"the in-sync ones (follow with floe reassign status)\n", plural(int64(n), "bucket"))
	}
	return nil
}
