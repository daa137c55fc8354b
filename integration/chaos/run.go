package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// RunConfig is one run of a scenario.
type RunConfig struct {
	Scenario Scenario
	Seed     uint64
	// Duration is how long faults are injected while the workloads run.
	Duration time.Duration
	Binary   string
	// Dir holds the cluster's data and logs.
	Dir string
	// ReplayDir gets the replay file of a failed run (default Dir); it
	// should outlive the run.
	ReplayDir string
	// Containers runs the nodes as Docker containers (Options.Containers).
	Containers bool
	// Secure runs a secure cluster (Options.Secure).
	Secure bool
	Logf   func(format string, args ...any)
}

// Verdict is the outcome of a run.
type Verdict struct {
	Scenario string        `json:"scenario"`
	Seed     uint64        `json:"seed"`
	Duration time.Duration `json:"duration_ns"`
	Log      LogResult     `json:"log"`
	KV       KVResult      `json:"kv"`
	DDL      KVResult      `json:"ddl"`
	// ReplicaDiffs lists buckets whose replicas differ where all hold
	// data, and nodes that keep the data of a replica the metadata took
	// from them.
	ReplicaDiffs []string `json:"replica_diffs"`
	// Moves counts the replica moves the scenario started and how they
	// ended.
	Moves MoveResult `json:"moves"`
	// Partitions counts the partitions of a partitioned log table made
	// and dropped.
	Partitions    PartitionResult `json:"partitions"`
	LeaderChanges int             `json:"leader_changes"`
	Recoveries    []Recovery      `json:"recoveries"`
	// ReplayFile is where a failed run wrote what replays it.
	ReplayFile string `json:"replay_file,omitempty"`
}

// Pass says whether the run kept every promise.
func (v Verdict) Pass() bool {
	return v.Log.Lost == 0 && v.Log.Duplicated == 0 && v.Log.Reordered == 0 && v.Log.WrongOffset == 0 &&
		len(v.ReplicaDiffs) == 0 && v.KV.Linearizable && v.DDL.Linearizable
}

// Replay is what a failed run writes, and what -chaos.replay reads.
type Replay struct {
	Scenario string        `json:"scenario"`
	Seed     uint64        `json:"seed"`
	Duration time.Duration `json:"duration_ns"`
	Verdict  Verdict       `json:"verdict"`
	History  []Event       `json:"history"`
}

// ReadReplay reads a replay file.
func ReadReplay(path string) (Replay, error) {
	var r Replay
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(data, &r)
}

// Run starts a cluster, runs the log and key workloads while the
// scenario injects faults for the duration, then heals everything, waits
// for the replicas to catch up and checks.
func Run(ctx context.Context, cfg RunConfig) (v Verdict, err error) {
	v = Verdict{Scenario: cfg.Scenario.Name, Seed: cfg.Seed, Duration: cfg.Duration}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	opts := Options{Binary: cfg.Binary, Dir: cfg.Dir, Nodes: 3, Containers: cfg.Containers, Secure: cfg.Secure, Logf: logf}
	if cfg.Scenario.Setup != nil {
		cfg.Scenario.Setup(&opts)
	}
	c, err := Start(ctx, opts)
	if err != nil {
		return v, err
	}
	defer c.Close()
	cl, err := c.Client(ctx)
	if err != nil {
		return v, err
	}
	defer cl.Close()
	lw := &LogWorkload{Database: "chaos", Table: "log", Buckets: 2, Writers: 4, Pad: 200,
		Partitioned: cfg.Scenario.PartitionedLog, Seed: cfg.Seed}
	if err := lw.Setup(ctx, cl, cfg.Scenario.Props); err != nil {
		return v, err
	}
	kw := &KVWorkload{Database: "chaos", Table: "kv", Clients: 3, Keys: 5, Seed: cfg.Seed}
	if err := kw.Setup(ctx, cl); err != nil {
		return v, err
	}
	dw := &DDLWorkload{Database: "chaosddl", Clients: 2, Names: 3, Seed: cfg.Seed}
	if err := dw.Setup(ctx, cl); err != nil {
		return v, err
	}
	before, err := lw.placement(ctx)
	if err != nil {
		return v, err
	}

	h := NewHistory()
	wctx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var workErr error
	var workMu sync.Mutex
	keep := func(err error) {
		workMu.Lock()
		if workErr == nil {
			workErr = err
		}
		workMu.Unlock()
	}
	wg.Go(func() {
		if err := lw.Run(wctx, h); err != nil {
			keep(err)
		}
	})
	wg.Go(func() {
		if err := kw.Run(wctx, h); err != nil {
			keep(err)
		}
	})
	wg.Go(func() { _ = dw.Run(wctx, h) })
	fctx, stopFaults := context.WithTimeout(ctx, cfg.Duration)
	env := &Env{C: c, Cl: cl, Rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), H: h, Log: lw, KV: kw, moves: newMoveLog()}
	pause(fctx, time.Second) // let the workloads start before the first fault
	faultErr := cfg.Scenario.Faults(fctx, env)
	if faultErr != nil && fctx.Err() != nil {
		// The window closed under a fault's command, which its context
		// killed (iptables waiting for the xtables lock another process
		// held, say): nothing failed, and restoreAll undoes what it did.
		logf("fault cut short by the end of the window: %v", faultErr)
		faultErr = nil
	}
	<-fctx.Done()
	stopFaults()
	if err := c.restoreAll(ctx); err != nil {
		stopWork()
		wg.Wait()
		return v, err
	}
	// The workloads go on a little after the faults stop: the cluster must
	// take writes again once healed.
	pause(ctx, 2*time.Second)
	stopWork()
	wg.Wait()
	if faultErr != nil && ctx.Err() == nil {
		return v, fmt.Errorf("chaos: scenario %s: %w", cfg.Scenario.Name, faultErr)
	}
	if workErr != nil {
		return v, workErr
	}
	if err := lw.settlePartitions(ctx, h); err != nil {
		return v, err
	}
	// Moves end before the replicas are compared, so the comparison is of
	// the final replica sets.
	if v.Moves, err = settleMoves(ctx, cl, env.moves, h, env.tables()...); err != nil {
		return v, err
	}
	if err := waitSettled(ctx, cl, lw); err != nil {
		return v, err
	}
	dw.Resolve(ctx, h)
	if v.Log, err = lw.Check(ctx); err != nil {
		return v, err
	}
	v.KV = kw.Check(time.Minute)
	v.DDL = dw.Check(time.Minute)
	after, err := lw.placement(ctx)
	if err != nil {
		return v, err
	}
	v.LeaderChanges = leaderChanges(before, after)
	v.Partitions = lw.partitionResult(after)
	v.Recoveries = h.Recoveries()
	if v.ReplicaDiffs, err = c.compareReplicaSets(ctx, lw.replicaSets(after)); err != nil {
		return v, err
	}
	if !v.Pass() {
		dir := cfg.ReplayDir
		if dir == "" {
			dir = cfg.Dir
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return v, err
		}
		v.ReplayFile = filepath.Join(dir, fmt.Sprintf("chaos-%s-%d.json", cfg.Scenario.Name, cfg.Seed))
		data, _ := json.MarshalIndent(Replay{Scenario: cfg.Scenario.Name, Seed: cfg.Seed, Duration: cfg.Duration,
			Verdict: v, History: h.Events()}, "", " ")
		if err := os.WriteFile(v.ReplayFile, data, 0o644); err != nil {
			return v, err
		}
	}
	return v, nil
}

// restoreAll undoes every fault: the network healed, S3 reachable,
// paused nodes resumed, full disks freed, stopped nodes restarted; then
// waits for the cluster to be ready.
func (c *Cluster) restoreAll(ctx context.Context) error {
	if err := c.Heal(ctx); err != nil {
		return err
	}
	for i := range c.Nodes {
		_ = c.Netem(ctx, uint32(i+1), 0, 0)
	}
	if c.s3 != nil {
		if err := c.UnblockS3(ctx); err != nil {
			return err
		}
	}
	for _, nd := range c.Nodes {
		nd.Resume()
		_ = nd.FreeDisk()
		if !nd.Running() || stopped(nd) {
			nd.Kill()
			if err := nd.Restart(); err != nil {
				return err
			}
		}
	}
	return c.WaitReady(ctx, 2*time.Minute)
}

// waitSettled waits until every bucket of both tables (of each partition
// of the log table) has its full ISR.
func waitSettled(ctx context.Context, cl *client.Client, lw *LogWorkload) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		sets, err := lw.placement(ctx)
		full := err == nil
		if desc, err := cl.Admin().DescribeTable(ctx, lw.Database, "kv"); err == nil {
			sets = append(sets, bucketSet{id: desc.ID, buckets: desc.Placement})
		} else {
			full = false
		}
		for _, s := range sets {
			for _, p := range s.buckets {
				if p.Leader == 0 || len(p.ISR) != len(p.Replicas) {
					full = false
				}
			}
		}
		if full {
			return nil
		}
		if !pause(ctx, 200*time.Millisecond) {
			return fmt.Errorf("chaos: replicas did not all return to their ISRs within 2 minutes")
		}
	}
}

// Table renders verdicts as a table: per workload (log appends, key
// upserts and lookups, DDL) the operations attempted, acknowledged
// (answered without error) and failed (an error: outcome unknown for a
// write); then the log's lost, duplicated and reordered records, replica
// diffs, the key and DDL operations the linearizability check covered and
// its result, leader changes and the longest recovery; last the replica
// moves started, completed, cancelled (went back), calls failed and moves
// left unfinished at the end; and the partitions of a partitioned log
// table created explicitly and by writers, those dropped, and the
// acknowledged records of dropped ones, excluded from the checks.
func Table(vs []Verdict) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "SCENARIO\tSEED\tSECS\tLOG-ATT\tLOG-ACK\tLOG-FAIL\tKEY-ATT\tKEY-ACK\tKEY-FAIL\t"+
		"DDL-ATT\tDDL-ACK\tDDL-FAIL\tLOST\tDUPS\tREORD\tDIFFS\tCHECKED\tLINEAR\tLEADERS\tRECOVERY\t"+
		"MV-START\tMV-DONE\tMV-BACK\tMV-FAIL\tMV-LEFT\tPT-EXPL\tPT-WRITE\tPT-DROP\tPT-EXCL\t")
	for _, v := range vs {
		worst := time.Duration(0)
		for _, r := range v.Recoveries {
			worst = max(worst, r.After)
		}
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n",
			v.Scenario, v.Seed, v.Duration.Seconds(),
			v.Log.Attempted, v.Log.Acknowledged, v.Log.Failed,
			v.KV.Attempted, v.KV.Acknowledged, v.KV.Failed,
			v.DDL.Attempted, v.DDL.Acknowledged, v.DDL.Failed,
			v.Log.Lost, v.Log.Duplicated, v.Log.Reordered+v.Log.WrongOffset, len(v.ReplicaDiffs),
			v.KV.Operations+v.DDL.Operations, v.KV.Linearizable && v.DDL.Linearizable, v.LeaderChanges,
			worst.Round(10*time.Millisecond),
			v.Moves.Started, v.Moves.Completed, v.Moves.Cancelled, v.Moves.Failed, v.Moves.Unfinished,
			v.Partitions.Explicit, v.Partitions.OnWrite, v.Partitions.Dropped, v.Log.Excluded)
	}
	w.Flush()
	return b.String()
}
