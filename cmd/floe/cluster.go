package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// clusterCmds are the subcommands of floe cluster.
func clusterCmds(env *cliEnv) []clientCmd {
	var force bool
	return []clientCmd{
		clusterStatusCmd(env),
		clusterRebalanceCmd(env),
		clusterSetCmd(env),
		{usage: "cluster add-voter ID ADDRESS", summary: "add a meta node to the metadata voters", nargs: 2,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				id, err := nodeID(pos[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(env.stderr, "checking that %s answers as meta node %d of this cluster, "+
					"adding it as a non-voter and promoting it once it has caught up...\n", pos[1], id)
				return adminDone(env, cf, "add-voter", c.Admin().AddVoter(ctx, id, pos[1]))
			}},
		{usage: "cluster remove-voter ID [--force]", summary: "remove a metadata voter", nargs: 1,
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&force, "force", false, "remove it even if the voters left that answer are fewer than their quorum "+
					"(the metadata then stops until enough of them are back); the last voter is never removed")
			},
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				id, err := nodeID(pos[0])
				if err != nil {
					return err
				}
				return adminDone(env, cf, "remove-voter", c.Admin().RemoveVoter(ctx, id, force))
			}},
		{usage: "cluster transfer-leadership [ID]", summary: "move the metadata leadership (to voter ID)", maxArgs: 1,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				var id uint32
				if len(pos) == 1 {
					var err error
					if id, err = nodeID(pos[0]); err != nil {
						return err
					}
				}
				return adminDone(env, cf, "transfer-leadership", c.Admin().TransferLeadership(ctx, id))
			}},
	}
}

// clusterStatusCmd prints the cluster status with a ready line; with
// --wait it first waits until the cluster is ready. JSON output always
// lists the buckets; text output with --buckets.
func clusterStatusCmd(env *cliEnv) clientCmd {
	var wait waitFlag
	var buckets bool
	return clientCmd{summary: "the cluster's readiness, voters and nodes (--buckets: and buckets); --wait waits until it is ready",
		usage: "cluster status [--wait [DURATION]] [--buckets]",
		flags: func(fs *flag.FlagSet) {
			fs.Var(&wait, "wait", fmt.Sprintf("wait until the cluster is ready (default %v), or fail with the reason", defaultReadyWait))
			fs.BoolVar(&buckets, "buckets", false, "also list every bucket: leader, epochs, ISR, high watermark, "+
				"under-replicated or offline (always in --output json)")
		},
		prepare: func(cf *clientFlags, pos []string) ([]string, error) {
			if wait.set && len(pos) > 0 {
				if err := wait.setDuration(pos[0]); err != nil {
					return nil, fmt.Errorf("%w: %v", errUsage, err)
				}
				pos = pos[1:]
			}
			if wait.set {
				// Connecting is part of the wait: the node may not be up yet.
				cf.timeout = max(cf.timeout, wait.d)
			}
			return pos, nil
		},
		// The body bounds its own calls: by --timeout, or by the wait.
		streaming: true,
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			addrs, err := serverAddrs(cf.servers)
			if err != nil {
				return err
			}
			var st *client.ClusterStatus
			if wait.set {
				st, err = waitClusterReady(ctx, env, c, addrs, wait.d)
			} else {
				st, err = clusterStatus(ctx, c, addrs, cf.timeout)
			}
			if err != nil {
				return err
			}
			var bs []client.BucketStatus
			if buckets || cf.output == "json" {
				bctx, cancel := context.WithTimeout(ctx, cf.timeout)
				defer cancel()
				if bs, err = c.Admin().BucketStatus(bctx); err != nil {
					return fmt.Errorf("bucket status: %w", err)
				}
			}
			return printStatus(env, cf, st, bs, buckets)
		}}
}

// clusterStatus asks for the cluster status once, within timeout; a call
// that timed out says what it waited for (statusTrouble).
func clusterStatus(ctx context.Context, c *client.Client, addrs []string, timeout time.Duration) (*client.ClusterStatus, error) {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := c.Admin().ClusterStatus(sctx)
	if err != nil && sctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("no answer within %v: %s", timeout, statusTrouble(ctx, c, addrs, err))
	}
	return st, err
}

func nodeID(s string) (uint32, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%w: bad node id %q", errUsage, s)
	}
	return uint32(id), nil
}

func adminDone(env *cliEnv, cf *clientFlags, what string, err error) error {
	if err != nil {
		return err
	}
	return printResult(env, cf, map[string]any{"ok": true}, "%s done\n", what)
}

// printStatus prints the status; buckets go into JSON always, into text
// with showBuckets.
func printStatus(env *cliEnv, cf *clientFlags, st *client.ClusterStatus, buckets []client.BucketStatus, showBuckets bool) error {
	ready, why := clusterReadiness(st)
	under, offline := bucketTrouble(buckets)
	if cf.output == "json" {
		// leader: the node id, or "" when no leader is known.
		var leader any = ""
		if st.Leader != 0 {
			leader = st.Leader
		}
		return printJSON(env, map[string]any{
			"cluster_id": st.ClusterID, "leader": leader, "term": st.Term,
			"commit_index": st.CommitIndex, "applied_index": st.AppliedIndex,
			"voters": st.Voters, "nodes": st.Nodes, "ready": ready, "not_ready_reason": why,
			"buckets": nonNilBuckets(buckets), "under_replicated_buckets": under, "offline_buckets": offline,
			"moves": st.Moves, "queued_moves": st.QueuedMoves, "settings": st.Settings,
		})
	}
	w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	readyLine := "yes"
	if !ready {
		readyLine = "no: " + why
	}
	fmt.Fprintf(w, "ready\t%s\n", readyLine)
	fmt.Fprintf(w, "cluster\t%s\nleader\t%d\nterm\t%d\ncommit index\t%d\napplied index\t%d\n",
		st.ClusterID, st.Leader, st.Term, st.CommitIndex, st.AppliedIndex)
	if showBuckets {
		fmt.Fprintf(w, "buckets\t%d (%d under-replicated, %d offline)\n", len(buckets), under, offline)
	}
	fmt.Fprintf(w, "moves\t%d running, %d waiting\n", len(st.Moves), st.QueuedMoves)
	fmt.Fprintf(w, "auto-elect leaders\t%s\n", onOff(st.Settings.AutoElectLeaders))
	fmt.Fprintln(w, "\nVOTER\tADDRESS\tSUFFRAGE\tSTATE")
	for _, v := range st.Voters {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", v.ID, v.Address, v.Suffrage, v.State)
	}
	fmt.Fprintln(w, "\nNODE\tROLES\tADDRESS\tRACK\tEPOCH\tALIVE\tDRAINING")
	for _, n := range st.Nodes {
		draining := strconv.FormatBool(n.Draining)
		if n.Decommissioning {
			draining = "decommissioning"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%v\t%s\n", n.ID, strings.Join(n.Roles, ","), n.Address, n.Rack, n.NodeEpoch, n.Alive, draining)
	}
	if len(st.Moves) > 0 {
		fmt.Fprintln(w, "\nMOVING\tFROM\tTO\tIN SYNC\tLEADER\tFOR")
		for _, p := range st.Moves {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d of %d\t%d\t%s\n", moveName(p.BucketMove), idList(p.Original), idList(p.Replicas),
				len(p.InSync), len(p.Replicas), p.Leader, time.Since(p.StartedAt).Round(time.Second))
		}
	}
	if showBuckets && len(buckets) > 0 {
		// A partitioned table's buckets are a line per partition: a year
		// of daily partitions is thousands of buckets.
		parts := partitionTrouble(buckets)
		if len(parts) > 0 {
			fmt.Fprintln(w, "\nPARTITIONED TABLE\tPARTITIONS\tBUCKETS\tUNDER-REPLICATED\tOFFLINE\tTROUBLED PARTITIONS")
			for _, p := range parts {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\n", p.table, p.partitions, p.buckets, p.under, p.offline, orNone(strings.Join(p.troubled, " ")))
			}
		}
		fmt.Fprintln(w, "\nTABLE\tBUCKET\tLEADER\tEPOCH\tISR\tREPLICAS\tHW\tSTATUS")
		for _, b := range buckets {
			if b.Partition != "" {
				continue
			}
			hw := "-"
			if b.HighWatermark != nil {
				hw = strconv.FormatInt(*b.HighWatermark, 10)
			}
			fmt.Fprintf(w, "%s.%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", b.Database, b.Table, b.Bucket, b.Leader, b.LeaderEpoch,
				joinIDs(b.ISR), joinIDs(b.Replicas), hw, bucketHealth(b))
		}
	}
	return w.Flush()
}

// partitionedStatus sums the buckets of one partitioned table.
type partitionedStatus struct {
	table                               string
	partitions, buckets, under, offline int
	troubled                            []string // partitions with an offline or under-replicated bucket (the first 5)
}

// partitionTrouble sums the buckets of partitioned tables by table, in
// the order the buckets come.
func partitionTrouble(buckets []client.BucketStatus) []*partitionedStatus {
	var out []*partitionedStatus
	byTable := map[string]*partitionedStatus{}
	seen := map[string]bool{}
	for _, b := range buckets {
		if b.Partition == "" {
			continue
		}
		name := b.Database + "." + b.Table
		p := byTable[name]
		if p == nil {
			p = &partitionedStatus{table: name}
			byTable[name] = p
			out = append(out, p)
		}
		key := name + "/" + b.Partition
		if !seen[key] {
			seen[key] = true
			p.partitions++
		}
		p.buckets++
		if b.UnderReplicated {
			p.under++
		}
		if b.Offline {
			p.offline++
		}
		if (b.Offline || b.UnderReplicated) && len(p.troubled) < 5 && !slices.Contains(p.troubled, b.Partition) {
			p.troubled = append(p.troubled, b.Partition)
		}
	}
	return out
}

// bucketTrouble counts the under-replicated and the offline buckets.
func bucketTrouble(buckets []client.BucketStatus) (under, offline int) {
	for _, b := range buckets {
		if b.UnderReplicated {
			under++
		}
		if b.Offline {
			offline++
		}
	}
	return under, offline
}

// bucketHealth is a bucket's STATUS column: online, under-replicated or
// offline, and why its high watermark is missing.
func bucketHealth(b client.BucketStatus) string {
	s := "online"
	switch {
	case b.Offline:
		s = "offline"
	case b.UnderReplicated:
		s = "under-replicated"
	}
	if b.Error != "" {
		s += " (" + cliMessage(errors.New(b.Error)) + ")"
	}
	return s
}

func joinIDs(ids []uint32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(parts, ",")
}

func nonNilBuckets(b []client.BucketStatus) []client.BucketStatus {
	if b == nil {
		return []client.BucketStatus{}
	}
	return b
}
