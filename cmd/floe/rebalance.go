package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// progressEvery paces the progress lines of commands that wait for moves.
const progressEvery = 5 * time.Second

// clusterRebalanceCmd is `floe cluster rebalance`: a plan that evens out
// replicas and preferred leaders over the nodes, printed, or run.
func clusterRebalanceCmd(env *cliEnv) clientCmd {
	var plan, execute bool
	var wait waitFlag
	var bounds moveBoundFlags
	return clientCmd{summary: "even out replicas and leaders over the tablet nodes: print the plan (--plan), or run it (--execute)",
		usage: "cluster rebalance [--plan | --execute [--throttle 20MB] [--max-moves N] [--wait [DURATION]]]",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&plan, "plan", false, "print the moves that would even out replicas and preferred leaders, and each node's load before and after (the default)")
			fs.BoolVar(&execute, "execute", false, "start the plan's moves")
			fs.Var(&wait, "wait", "with --execute: wait until every move is done (at most DURATION, default 10m), printing progress, then elect the preferred leaders")
			bounds.register(fs)
		},
		prepare:   waitDuration(&wait, 0),
		streaming: true,
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			opts, err := bounds.options()
			switch {
			case err != nil:
				return err
			case plan && execute:
				return fmt.Errorf("%w: --plan prints the plan, --execute runs it: one or the other", errUsage)
			case !execute && (wait.set || opts != client.MoveOptions{}):
				return fmt.Errorf("%w: --wait, --throttle and --max-moves go with --execute", errUsage)
			}
			cctx, cancel := context.WithTimeout(ctx, cf.timeout)
			p, err := c.Admin().Rebalance(cctx, client.RebalanceOptions{Execute: execute, MoveOptions: opts})
			cancel()
			if err != nil {
				return err
			}
			if cf.output == "json" && !wait.set {
				return printJSON(env, p)
			}
			if cf.output != "json" {
				printRebalance(env, p)
			}
			if !execute || len(p.Moves) == 0 {
				return nil
			}
			if !wait.set {
				fmt.Fprintf(env.stdout, "started: follow with `floe reassign status`; leaders follow the new replica order at the next "+
					"clean election (`floe table elect DB.TABLE`, or `floe cluster set leaders.auto-elect=on`)\n")
				return nil
			}
			wctx, cancel := context.WithTimeout(ctx, waitOr(wait, 10*time.Minute))
			defer cancel()
			if err := waitMoves(wctx, env, c, p.Moves); err != nil {
				return err
			}
			elected, err := electPreferred(wctx, c, p.Moves)
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, map[string]any{"plan": p, "elected": elected})
			}
			fmt.Fprintf(env.stdout, "rebalanced: %s moved, %s given to their preferred leader\n",
				plural(int64(len(p.Moves)), "bucket"), plural(int64(elected), "bucket"))
			return nil
		}}
}

// waitDuration takes a --wait flag's duration from the positional
// argument after the first n, when --wait is set and one is there.
func waitDuration(wait *waitFlag, n int) func(cf *clientFlags, pos []string) ([]string, error) {
	return func(cf *clientFlags, pos []string) ([]string, error) {
		if wait.set && len(pos) == n+1 {
			if err := wait.setDuration(pos[n]); err != nil {
				return nil, fmt.Errorf("%w: %v", errUsage, err)
			}
			pos = pos[:n]
		}
		return pos, nil
	}
}

// waitOr is the wait's duration, or d when the flag gave none.
func waitOr(w waitFlag, d time.Duration) time.Duration {
	if w.d > 0 && w.d != defaultReadyWait {
		return w.d
	}
	return d
}

// printRebalance prints a plan: its moves, then each node's load before
// and after.
func printRebalance(env *cliEnv, p *client.RebalancePlan) {
	if len(p.Moves) == 0 {
		fmt.Fprintf(env.stdout, "balanced: nothing to move")
		if p.Busy > 0 {
			fmt.Fprintf(env.stdout, " (%s left out: moving, waiting or offline)", plural(int64(p.Busy), "bucket"))
		}
		fmt.Fprintln(env.stdout)
		return
	}
	w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BUCKET\tFROM\tTO")
	for _, m := range p.Moves {
		fmt.Fprintf(w, "%s\t%s\t%s\n", moveName(m.BucketMove), idList(m.From), idList(m.Replicas))
	}
	fmt.Fprintln(w, "\nNODE\tREPLICAS\tLEADERS")
	for i, b := range p.Before {
		a := p.After[i]
		fmt.Fprintf(w, "%d\t%d → %d\t%d → %d\n", b.Node, b.Replicas, a.Replicas, b.Leaders, a.Leaders)
	}
	w.Flush()
	copies := 0
	for _, m := range p.Moves {
		for _, r := range m.Replicas {
			if !slices.Contains(m.From, r) {
				copies++
			}
		}
	}
	fmt.Fprintf(env.stdout, "%s: %s to copy, %s to reorder", plural(int64(len(p.Moves)), "move"), plural(int64(copies), "replica"),
		plural(int64(len(p.Moves)-countCopying(p.Moves)), "bucket"))
	if p.Busy > 0 {
		fmt.Fprintf(env.stdout, "; %s left out (moving, waiting or offline)", plural(int64(p.Busy), "bucket"))
	}
	fmt.Fprintln(env.stdout)
	if p.Started != nil {
		fmt.Fprintf(env.stdout, "%d started, %d waiting for a turn (%s)\n", len(p.Started.Started), len(p.Started.Queued),
			boundsLine(p.Started.ThrottleBytesPerS, p.Started.MaxMoves))
	}
}

// countCopying counts the moves that add a replica (the others reorder).
func countCopying(moves []client.PlannedMove) int {
	n := 0
	for _, m := range moves {
		if slices.ContainsFunc(m.Replicas, func(r uint32) bool { return !slices.Contains(m.From, r) }) {
			n++
		}
	}
	return n
}

// waitMoves waits until none of moves runs or waits any more, printing
// progress to stderr every progressEvery.
func waitMoves(ctx context.Context, env *cliEnv, c *client.Client, moves []client.PlannedMove) error {
	mine := map[string]bool{}
	for _, m := range moves {
		mine[moveName(m.BucketMove)] = true
	}
	start, last := time.Now(), time.Time{}
	for {
		st, err := c.Admin().MoveStatus(ctx)
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("moves not done after %v: %w", time.Since(start).Round(time.Second), err)
		}
		if err == nil {
			running, waiting := 0, 0
			for _, p := range st.Running {
				if mine[moveName(p.BucketMove)] {
					running++
				}
			}
			for _, q := range st.Queued {
				if mine[moveName(q)] {
					waiting++
				}
			}
			if running+waiting == 0 {
				return nil
			}
			if time.Since(last) >= progressEvery {
				last = time.Now()
				fmt.Fprintf(env.stderr, "%d of %d moves done, %d running, %d waiting (%s)\n", len(moves)-running-waiting, len(moves),
					running, waiting, time.Since(start).Round(time.Second))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moves not done after %v: %w (they go on; follow with floe reassign status)", time.Since(start).Round(time.Second), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// electPreferred gives each moved bucket its preferred leader (a clean
// election of the tables the moves touched), and counts the buckets that
// changed leader.
func electPreferred(ctx context.Context, c *client.Client, moves []client.PlannedMove) (int, error) {
	type table struct{ db, name string }
	var tables []table
	for _, m := range moves {
		if t := (table{m.Database, m.Table}); m.Table != "" && !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	elected := 0
	for _, t := range tables {
		es, err := c.Admin().ElectLeaders(ctx, t.db, t.name, client.ElectOptions{})
		switch {
		case errors.Is(err, transport.ErrAlreadyExists):
		case err != nil:
			return elected, fmt.Errorf("electing the preferred leaders of %s.%s: %w", t.db, t.name, err)
		}
		for _, e := range es {
			if e.Elected {
				elected++
			}
		}
	}
	return elected, nil
}

// clusterSetCmd is `floe cluster set NAME=VALUE`.
func clusterSetCmd(env *cliEnv) clientCmd {
	return clientCmd{summary: "change a cluster setting: leaders.auto-elect=on|off (give buckets back to their preferred leader automatically)",
		usage: "cluster set NAME=VALUE", nargs: 1,
		check: func(pos []string) error { _, err := parseSetting(pos[0]); return err },
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			on, err := parseSetting(pos[0])
			if err != nil {
				return err
			}
			s, err := c.Admin().SetAutoElectLeaders(ctx, on)
			if err != nil {
				return err
			}
			return printResult(env, cf, s, "leaders.auto-elect=%s\n", onOff(s.AutoElectLeaders))
		}}
}

// parseSetting parses leaders.auto-elect=on|off, the one setting there is.
func parseSetting(s string) (bool, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name != "leaders.auto-elect" {
		return false, fmt.Errorf("%w: want leaders.auto-elect=on|off, the one cluster setting, not %q", errUsage, s)
	}
	switch strings.ToLower(value) {
	case "on", "true":
		return true, nil
	case "off", "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: leaders.auto-elect is on or off, not %q", errUsage, value)
}

// onOff prints a setting.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// nodeDecommissionCmd is `floe node decommission ID`.
func nodeDecommissionCmd(env *cliEnv) clientCmd {
	var wait waitFlag
	return clientCmd{summary: "move every replica off a tablet node (it takes no new ones), so it can be stopped and removed",
		usage: "node decommission ID [--wait [DURATION]]", nargs: 1,
		flags: func(fs *flag.FlagSet) {
			fs.Var(&wait, "wait", "wait until the node holds no replica (at most DURATION, default 30m), printing progress")
		},
		prepare:   waitDuration(&wait, 1),
		streaming: true,
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			id, err := nodeID(pos[0])
			if err != nil {
				return err
			}
			cctx, cancel := context.WithTimeout(ctx, cf.timeout)
			res, err := c.Admin().DecommissionNode(cctx, id)
			cancel()
			if err != nil {
				return err
			}
			if !wait.set {
				return printResult(env, cf, res, "node %d is decommissioning: the controller moves its replicas to other nodes "+
					"(floe reassign status); once it holds none, stop it and run floe node remove %d\n", id, id)
			}
			fmt.Fprintf(env.stderr, "node %d is decommissioning; waiting until it holds no replica\n", id)
			wctx, cancel := context.WithTimeout(ctx, waitOr(wait, 30*time.Minute))
			defer cancel()
			start, last := time.Now(), time.Time{}
			for {
				held, err := replicasOn(wctx, c, id)
				if err == nil && held == 0 {
					return printResult(env, cf, res, "node %d holds no replica (%s): stop it, then floe node remove %d\n", id,
						time.Since(start).Round(time.Second), id)
				}
				if err == nil && time.Since(last) >= progressEvery {
					last = time.Now()
					fmt.Fprintf(env.stderr, "node %d: %s left (%s)\n", id, plural(int64(held), "replica"), time.Since(start).Round(time.Second))
				}
				select {
				case <-wctx.Done():
					return fmt.Errorf("node %d still holds replicas after %v: the moves go on (floe reassign status)",
						id, time.Since(start).Round(time.Second))
				case <-time.After(2 * time.Second):
				}
			}
		}}
}

// replicasOn counts the buckets node id is a replica of.
func replicasOn(ctx context.Context, c *client.Client, id uint32) (int, error) {
	bs, err := c.Admin().BucketStatus(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range bs {
		if slices.Contains(b.Replicas, id) {
			n++
		}
	}
	return n, nil
}
