package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/floedb/floe/client"
)

// Moving replicas: `floe table reassign` starts moves, `floe reassign
// status|cancel` follows and undoes them (docs/operations.md, moving
// replicas).

// moveBoundFlags are the bounds every move command may set.
type moveBoundFlags struct {
	throttle string
	maxMoves int
}

func (m *moveBoundFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.throttle, "throttle", "", "catch-up bytes per second each node lets joining replicas copy, e.g. 20MB (MB, MiB, GB...; \"none\" removes the bound; default: keep the cluster's)")
	fs.IntVar(&m.maxMoves, "max-moves", 0, "moves running at once, at most; more wait their turn (default: keep the cluster's, 4 at first)")
}

func (m *moveBoundFlags) options() (client.MoveOptions, error) {
	var o client.MoveOptions
	if m.maxMoves < 0 {
		return o, fmt.Errorf("%w: --max-moves %d: want 1 or more", errUsage, m.maxMoves)
	}
	o.MaxMoves = int32(m.maxMoves)
	switch m.throttle {
	case "":
	case "none":
		o.ThrottleBytesPerS = -1
	default:
		n, err := parseByteRate(m.throttle)
		if err != nil {
			return o, fmt.Errorf("%w: --throttle: %v", errUsage, err)
		}
		o.ThrottleBytesPerS = n
	}
	return o, nil
}

// parseByteRate reads a rate in bytes per second: a number with an
// optional unit (KB, MB, GB: powers of 1000; KiB, MiB, GiB: of 1024) and
// an optional "/s".
func parseByteRate(s string) (int64, error) {
	v := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = num, u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || n <= 0 || n*float64(mult) > 1e15 {
		return 0, fmt.Errorf("%q: want a positive rate such as 20MB, 512KiB or 1048576", s)
	}
	return int64(n * float64(mult)), nil
}

// parseReplicas reads --replicas: node ids, comma-separated.
func parseReplicas(s string) ([]uint32, error) {
	var out []uint32
	for _, p := range splitList(s) {
		id, err := nodeID(p)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --replicas: want node ids, e.g. 1,4,5", errUsage)
	}
	return out, nil
}

// tableReassignCmd is `floe table reassign`: moves of buckets' replicas.
func tableReassignCmd(env *cliEnv) clientCmd {
	var bucket int
	var replicas, plan, partition string
	var bounds moveBoundFlags
	return clientCmd{summary: "move buckets' replicas to other nodes (one bucket, or a JSON plan of many)",
		usage: "table reassign DB.TABLE [--partition dt=X] --bucket N --replicas 1,4,5 | table reassign --plan FILE [--throttle 20MB] [--max-moves N]",
		nargs: 0, maxArgs: 1, arg: argTable,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&bucket, "bucket", -1, "the bucket to move")
			fs.StringVar(&partition, "partition", "", "of a partitioned table, the partition of the bucket (dt=2026-12-03)")
			fs.StringVar(&replicas, "replicas", "", "the bucket's new replicas, preferred leader first, e.g. 1,4,5")
			fs.StringVar(&plan, "plan", "", `a JSON file of moves: [{"database":"db","table":"t","bucket":0,"replicas":[1,4,5]}, ...] (what "floe reassign status -o json" and plans print)`)
			bounds.register(fs)
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			opts, err := bounds.options()
			if err != nil {
				return err
			}
			var moves []client.BucketMove
			switch {
			case plan != "" && (len(pos) > 0 || bucket >= 0 || replicas != ""):
				return fmt.Errorf("%w: --plan names its moves: no DB.TABLE, --bucket or --replicas with it", errUsage)
			case plan != "":
				if moves, err = readMovePlan(plan); err != nil {
					return err
				}
			case len(pos) == 1 && bucket >= 0 && replicas != "":
				db, name, err := tableName(pos[0])
				if err != nil {
					return err
				}
				ids, err := parseReplicas(replicas)
				if err != nil {
					return err
				}
				moves = []client.BucketMove{{Database: db, Table: name, Partition: partition, Bucket: int32(bucket), Replicas: ids}}
			case len(pos) == 0 && (opts.ThrottleBytesPerS != 0 || opts.MaxMoves != 0) && bucket < 0 && replicas == "":
				// only the bounds change
			default:
				return fmt.Errorf("%w: name DB.TABLE with --bucket and --replicas, or --plan FILE", errUsage)
			}
			res, err := c.Admin().MoveReplicas(ctx, moves, opts)
			if err != nil {
				return err
			}
			if cf.output == "json" {
				return printJSON(env, res)
			}
			for _, m := range res.Started {
				fmt.Fprintf(env.stdout, "moving %s: replicas %s\n", moveName(m), idList(m.Replicas))
			}
			for _, m := range res.Queued {
				fmt.Fprintf(env.stdout, "queued %s: replicas %s (waits for a turn: at most %d moves at once)\n", moveName(m), idList(m.Replicas), res.MaxMoves)
			}
			fmt.Fprintf(env.stdout, "%s; follow with: floe reassign status\n", boundsLine(res.ThrottleBytesPerS, res.MaxMoves))
			return nil
		}}
}

// readMovePlan reads a JSON plan of moves.
func readMovePlan(path string) ([]client.BucketMove, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var moves []client.BucketMove
	if err := json.Unmarshal(data, &moves); err != nil {
		// a status or plan printed with -o json holds them under "moves"
		// or as running/queued moves
		var wrapped struct {
			Moves   []client.BucketMove   `json:"moves"`
			Running []client.MoveProgress `json:"running"`
			Queued  []client.BucketMove   `json:"queued"`
		}
		if err2 := json.Unmarshal(data, &wrapped); err2 != nil {
			return nil, fmt.Errorf("plan %s: %v (want a JSON list of {database, table, bucket, replicas})", path, err)
		}
		moves = wrapped.Moves
		for _, r := range wrapped.Running {
			moves = append(moves, r.BucketMove)
		}
		moves = append(moves, wrapped.Queued...)
	}
	if len(moves) == 0 {
		return nil, fmt.Errorf("plan %s holds no move", path)
	}
	for i, m := range moves {
		if m.Database == "" || m.Table == "" || len(m.Replicas) == 0 || m.Bucket < 0 {
			return nil, fmt.Errorf("plan %s: move %d: want database, table, bucket and replicas", path, i+1)
		}
	}
	return moves, nil
}

// reassignCmds are `floe reassign status|cancel`.
func reassignCmds(env *cliEnv) []clientCmd {
	var bucket int
	var all bool
	return []clientCmd{
		{usage: "reassign status", summary: "the moves of replicas running and waiting, and how far each is", nargs: 0,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
				st, err := c.Admin().MoveStatus(ctx)
				if err != nil {
					return err
				}
				if cf.output == "json" {
					return printJSON(env, st)
				}
				if len(st.Running)+len(st.Queued) == 0 {
					fmt.Fprintf(env.stdout, "no move running or waiting (%s)\n", boundsLine(st.ThrottleBytesPerS, st.MaxMoves))
					return nil
				}
				for _, p := range st.Running {
					fmt.Fprintf(env.stdout, "%s: %s → %s, %d of %d in sync, leader %d, for %s\n", moveName(p.BucketMove), idList(p.Original),
						idList(p.Replicas), len(p.InSync), len(p.Replicas), p.Leader, time.Since(p.StartedAt).Round(time.Second))
				}
				for _, m := range st.Queued {
					fmt.Fprintf(env.stdout, "%s: → %s, waiting\n", moveName(m), idList(m.Replicas))
				}
				fmt.Fprintf(env.stdout, "%d running, %d waiting (%s)\n", len(st.Running), len(st.Queued), boundsLine(st.ThrottleBytesPerS, st.MaxMoves))
				return nil
			}},
		{usage: "reassign cancel DB.TABLE --bucket N | reassign cancel --all", summary: "go back from a move (to the original replicas), or from every move",
			nargs: 0, maxArgs: 1, arg: argTable,
			flags: func(fs *flag.FlagSet) {
				fs.IntVar(&bucket, "bucket", -1, "the bucket whose move to cancel")
				fs.BoolVar(&all, "all", false, "cancel every move: the waiting ones are dropped, the running ones go back where they can")
			},
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				var res *client.MoveResult
				var err error
				switch {
				case all && len(pos) == 0 && bucket < 0:
					res, err = c.Admin().CancelAllMoves(ctx)
				case !all && len(pos) == 1 && bucket >= 0:
					db, name, err2 := tableName(pos[0])
					if err2 != nil {
						return err2
					}
					res, err = c.Admin().CancelMove(ctx, db, name, int32(bucket))
				default:
					return fmt.Errorf("%w: name DB.TABLE with --bucket, or --all", errUsage)
				}
				if err != nil {
					return err
				}
				if cf.output == "json" {
					return printJSON(env, res)
				}
				for _, m := range res.Cancelled {
					fmt.Fprintf(env.stdout, "cancelled %s: back to replicas %s\n", moveName(m), idList(m.Replicas))
				}
				for _, m := range res.Dequeued {
					fmt.Fprintf(env.stdout, "dropped waiting move of %s\n", moveName(m))
				}
				for _, m := range res.Kept {
					fmt.Fprintf(env.stdout, "kept %s: none of its original replicas is in sync, so it can only finish\n", moveName(m))
				}
				if len(res.Cancelled)+len(res.Dequeued) == 0 && len(res.Kept) == 0 {
					fmt.Fprintln(env.stdout, "no move to cancel")
				}
				return nil
			}},
	}
}

// moveName names a move's bucket.
func moveName(m client.BucketMove) string {
	if m.Table == "" {
		return fmt.Sprintf("a dropped table's bucket %d", m.Bucket)
	}
	if m.Partition != "" {
		return fmt.Sprintf("%s.%s/%s bucket %d", m.Database, m.Table, m.Partition, m.Bucket)
	}
	return fmt.Sprintf("%s.%s bucket %d", m.Database, m.Table, m.Bucket)
}

// idList prints node ids as 1,4,5.
func idList(ids []uint32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(parts, ",")
}

// boundsLine says the cluster's move bounds.
func boundsLine(throttle int64, maxMoves int32) string {
	t := "no throttle"
	if throttle > 0 {
		t = fmt.Sprintf("throttle %s/s per node", humanBytes(throttle))
	}
	return fmt.Sprintf("%s, at most %d moves at once", t, maxMoves)
}

// humanBytes prints n bytes in decimal units.
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', -1, 64) + " GB"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " MB"
	case n >= 1e3:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + " KB"
	}
	return strconv.FormatInt(n, 10) + " B"
}
