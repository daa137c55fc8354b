package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/floedb/floe/client"
)

// clusterCmds are the subcommands of floe cluster.
func clusterCmds(env *cliEnv) []clientCmd {
	var force bool
	return []clientCmd{
		clusterStatusCmd(env),
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
// --wait it first waits until the cluster is ready.
func clusterStatusCmd(env *cliEnv) clientCmd {
	var wait waitFlag
	return clientCmd{summary: "the cluster's readiness, voters and nodes; --wait waits until it is ready", usage: "cluster status [--wait [DURATION]]",
		flags: func(fs *flag.FlagSet) {
			fs.Var(&wait, "wait", fmt.Sprintf("wait until the cluster is ready (default %v), or fail with the reason", defaultReadyWait))
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
			if wait.set {
				st, err := waitClusterReady(ctx, env, c, wait.d)
				if err != nil {
					return err
				}
				return printStatus(env, cf, st)
			}
			ctx, cancel := context.WithTimeout(ctx, cf.timeout)
			defer cancel()
			st, err := c.Admin().ClusterStatus(ctx)
			if err != nil {
				return err
			}
			return printStatus(env, cf, st)
		}}
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

func printStatus(env *cliEnv, cf *clientFlags, st *client.ClusterStatus) error {
	ready, why := clusterReadiness(st)
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
	fmt.Fprintln(w, "\nVOTER\tADDRESS\tSUFFRAGE\tSTATE")
	for _, v := range st.Voters {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", v.ID, v.Address, v.Suffrage, v.State)
	}
	fmt.Fprintln(w, "\nNODE\tROLES\tADDRESS\tRACK\tEPOCH\tALIVE")
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%v\n", n.ID, strings.Join(n.Roles, ","), n.Address, n.Rack, n.NodeEpoch, n.Alive)
	}
	return w.Flush()
}
