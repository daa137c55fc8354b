package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/floedb/floe/client"
)

// Env is what a scenario's fault schedule works with.
type Env struct {
	C   *Cluster
	Cl  *client.Client
	Rng *rand.Rand
	H   *History
	// Log is the log workload's table (faults aim at its buckets).
	Log *LogWorkload
	// KV is the key workload's table (moves aim at its bucket too).
	KV *KVWorkload

	moves *moveLog // the replica moves the scenario starts
}

// tables are the workloads' tables.
func (e *Env) tables() []tableRef {
	out := []tableRef{{e.Log.Database, e.Log.Table}}
	if e.KV != nil {
		out = append(out, tableRef{e.KV.Database, e.KV.Table})
	}
	return out
}

// Scenario is a named fault schedule.
type Scenario struct {
	Name string
	// Doc says what the scenario does, for the verdict and docs/chaos.md.
	Doc string
	// Setup tweaks the cluster's options (S3, a small disk).
	Setup func(*Options)
	// Props are the log table's properties (tiering scenarios).
	Props map[string]string
	// PartitionedLog partitions the log table by day and has its
	// workload create and drop partitions while it runs (partlog.go).
	PartitionedLog bool
	// Faults injects faults until ctx ends, recording each in e.H.
	Faults func(ctx context.Context, e *Env) error
	// Regressions are seeds that once broke a promise: a suite run of the
	// scenario runs them too, besides the seeds it was asked for.
	Regressions []uint64
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// jitter is d plus up to half of d, drawn from rng.
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return d + time.Duration(rng.Int64N(int64(d)/2+1))
}

// bucketLeader is the node leading bucket b of the log table now (of a
// partitioned one, bucket b of one of its live partitions).
func (e *Env) bucketLeader(ctx context.Context, b int32) (*Node, error) {
	if e.Log.Partitioned {
		id, err := e.Log.liveBucketLeader(ctx, b)
		if err != nil {
			return nil, err
		}
		return e.C.Node(id), nil
	}
	desc, err := e.Cl.Admin().DescribeTable(ctx, e.Log.Database, e.Log.Table)
	if err != nil {
		return nil, err
	}
	if l := desc.Placement[b].Leader; l != 0 {
		return e.C.Node(l), nil
	}
	return nil, fmt.Errorf("chaos: bucket %d has no leader", b)
}

// waitLeader retries bucketLeader for a while (leadership may be moving).
func (e *Env) waitLeader(ctx context.Context, b int32) (*Node, error) {
	var err error
	for range 100 {
		var nd *Node
		if nd, err = e.bucketLeader(ctx, b); err == nil {
			return nd, nil
		}
		if !pause(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
	return nil, err
}

// metaLeader is the node leading the metadata group now.
func (e *Env) metaLeader(ctx context.Context) (*Node, error) {
	st, err := e.Cl.Admin().ClusterStatus(ctx)
	if err != nil {
		return nil, err
	}
	if st.Leader == 0 {
		return nil, fmt.Errorf("chaos: no metadata leader")
	}
	return e.C.Node(st.Leader), nil
}

// others are the nodes but these.
func (e *Env) others(not ...uint32) []uint32 {
	var out []uint32
	for _, nd := range e.C.Nodes {
		if !slices.Contains(not, nd.ID) {
			out = append(out, nd.ID)
		}
	}
	return out
}

// cycle runs fault, holds it for hold, undoes it, then waits rest, until
// ctx ends; undo always runs once fault did.
func cycle(ctx context.Context, e *Env, hold, rest time.Duration, fault func() (undo func() error, err error)) error {
	for ctx.Err() == nil {
		undo, err := fault()
		if err != nil {
			return err
		}
		pause(ctx, jitter(e.Rng, hold))
		if err := undo(); err != nil {
			return err
		}
		if !pause(ctx, jitter(e.Rng, rest)) {
			return nil
		}
	}
	return nil
}

// A fault injects one fault, recording it in e.H, and returns what
// undoes it.
type fault func(ctx context.Context, e *Env) (undo func() error, err error)

// every is a schedule that injects f, holds it for hold, undoes it and
// rests for rest (both with jitter), until ctx ends.
func every(hold, rest time.Duration, f fault) func(ctx context.Context, e *Env) error {
	return func(ctx context.Context, e *Env) error {
		return cycle(ctx, e, hold, rest, func() (func() error, error) { return f(ctx, e) })
	}
}

// killBucketLeader SIGKILLs the leader of a random log bucket; undo
// restarts it.
func killBucketLeader(ctx context.Context, e *Env) (func() error, error) {
	nd, err := e.waitLeader(ctx, e.Rng.Int32N(e.Log.Buckets))
	if err != nil {
		return nil, err
	}
	e.H.Fault(fmt.Sprintf("kill node %d (bucket leader)", nd.ID))
	nd.Kill()
	return func() error { e.H.Fault(fmt.Sprintf("restart node %d", nd.ID)); return nd.Restart() }, nil
}

// pauseBucketLeader SIGSTOPs the leader of a random log bucket; undo
// resumes it.
func pauseBucketLeader(ctx context.Context, e *Env) (func() error, error) {
	nd, err := e.waitLeader(ctx, e.Rng.Int32N(e.Log.Buckets))
	if err != nil {
		return nil, err
	}
	e.H.Fault(fmt.Sprintf("pause node %d (bucket leader)", nd.ID))
	nd.Pause()
	return func() error { e.H.Fault(fmt.Sprintf("resume node %d", nd.ID)); nd.Resume(); return nil }, nil
}

// isolateMetaLeader cuts the metadata leader off from the other nodes;
// undo heals.
func isolateMetaLeader(ctx context.Context, e *Env) (func() error, error) {
	nd, err := e.metaLeader(ctx)
	if err != nil {
		return nil, err
	}
	e.H.Fault(fmt.Sprintf("isolate node %d (metadata leader)", nd.ID))
	if err := e.C.Partition(ctx, []uint32{nd.ID}, e.others(nd.ID)); err != nil {
		return nil, err
	}
	return func() error { e.H.Fault("heal"); return e.C.Heal(context.Background()) }, nil
}

// splitMajority cuts a random node off from the others; undo heals.
func splitMajority(ctx context.Context, e *Env) (func() error, error) {
	lone := uint32(1 + e.Rng.IntN(len(e.C.Nodes)))
	e.H.Fault(fmt.Sprintf("partition %v | %v", []uint32{lone}, e.others(lone)))
	if err := e.C.Partition(ctx, e.others(lone), []uint32{lone}); err != nil {
		return nil, err
	}
	return func() error { e.H.Fault("heal"); return e.C.Heal(context.Background()) }, nil
}

// cutBucketLeader cuts the leader of a random log bucket off from the
// other nodes, one way (they cannot reach it) or both; undo heals.
func cutBucketLeader(ctx context.Context, e *Env) (func() error, error) {
	nd, err := e.waitLeader(ctx, e.Rng.Int32N(e.Log.Buckets))
	if err != nil {
		return nil, err
	}
	if e.Rng.IntN(2) == 0 {
		e.H.Fault(fmt.Sprintf("one-way: nodes %v cannot reach node %d (bucket leader)", e.others(nd.ID), nd.ID))
		err = e.C.CutOneWay(ctx, e.others(nd.ID), []uint32{nd.ID})
	} else {
		e.H.Fault(fmt.Sprintf("isolate node %d (bucket leader)", nd.ID))
		err = e.C.Partition(ctx, []uint32{nd.ID}, e.others(nd.ID))
	}
	if err != nil {
		return nil, err
	}
	return func() error { e.H.Fault("heal"); return e.C.Heal(context.Background()) }, nil
}

// blockS3 cuts every node off from the S3 server; undo restores it.
func blockS3(ctx context.Context, e *Env) (func() error, error) {
	e.H.Fault("block S3")
	if err := e.C.BlockS3(ctx); err != nil {
		return nil, err
	}
	return func() error { e.H.Fault("unblock S3"); return e.C.UnblockS3(context.Background()) }, nil
}

// anyOf injects one of faults, drawn at random.
func anyOf(faults ...fault) fault {
	return func(ctx context.Context, e *Env) (func() error, error) {
		return faults[e.Rng.IntN(len(faults))](ctx, e)
	}
}

// Scenarios are the suite's fault schedules, by name.
var Scenarios = []Scenario{
	{Name: "leader-kill", Doc: "SIGKILL the leader of a log bucket, restart it after a while, again",
		Faults: every(3*time.Second, 2*time.Second, killBucketLeader)},
	{Name: "leader-pause", Doc: "SIGSTOP a bucket leader past failure detection (4 s), then SIGCONT",
		Faults: every(4*time.Second, 2*time.Second, pauseBucketLeader)},
	{Name: "partition-meta-minority", Doc: "cut the metadata leader off from the other nodes (a minority of one), heal",
		Faults: every(4*time.Second, 2*time.Second, isolateMetaLeader)},
	{Name: "partition-majority", Doc: "split the nodes two against one at random (the majority side goes on), heal",
		Faults: every(4*time.Second, 2*time.Second, splitMajority)},
	{Name: "partition-bucket-leader", Doc: "cut a bucket leader off from its followers, one way (followers cannot reach it) or both, heal",
		Faults: every(4*time.Second, 2*time.Second, cutBucketLeader)},
	{Name: "bridge", Doc: "nodes 1 and 3 cannot talk, node 2 talks to both (a bridge), heal",
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 5*time.Second, 2*time.Second, func() (func() error, error) {
				e.H.Fault("bridge through node 2")
				if err := e.C.Ring(ctx); err != nil {
					return nil, err
				}
				return func() error { e.H.Fault("heal"); return e.C.Heal(context.Background()) }, nil
			})
		}},
	{Name: "pause-then-kill", Doc: "pause a follower, then SIGKILL the bucket leader, so the survivors must decide without either (the NATS JetStream loss), resume, restart",
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 4*time.Second, 3*time.Second, func() (func() error, error) {
				leader, err := e.waitLeader(ctx, e.Rng.Int32N(e.Log.Buckets))
				if err != nil {
					return nil, err
				}
				others := e.others(leader.ID)
				paused := e.C.Node(others[e.Rng.IntN(len(others))])
				e.H.Fault(fmt.Sprintf("pause node %d", paused.ID))
				paused.Pause()
				pause(ctx, 500*time.Millisecond)
				e.H.Fault(fmt.Sprintf("kill node %d (bucket leader)", leader.ID))
				leader.Kill()
				return func() error {
					e.H.Fault(fmt.Sprintf("resume node %d, restart node %d", paused.ID, leader.ID))
					paused.Resume()
					return leader.Restart()
				}, nil
			})
		}},
	{Name: "rolling-restart", Doc: "SIGTERM and restart each node in turn, waiting for the cluster to be ready in between",
		Faults: func(ctx context.Context, e *Env) error {
			for i := 0; ctx.Err() == nil; i++ {
				nd := e.C.Nodes[i%len(e.C.Nodes)]
				e.H.Fault(fmt.Sprintf("restart node %d", nd.ID))
				nd.Stop()
				if err := nd.Restart(); err != nil {
					return err
				}
				if err := e.C.WaitReady(ctx, time.Minute); err != nil && ctx.Err() == nil {
					return err
				}
				pause(ctx, jitter(e.Rng, 2*time.Second))
			}
			return nil
		}},
	{Name: "wiped-node", Doc: "SIGKILL a follower, delete its data folder, restart it: it rejoins as a new incarnation and copies its replicas again",
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 2*time.Second, 5*time.Second, func() (func() error, error) {
				leader, err := e.waitLeader(ctx, 0)
				if err != nil {
					return nil, err
				}
				others := e.others(leader.ID)
				nd := e.C.Node(others[e.Rng.IntN(len(others))])
				e.H.Fault(fmt.Sprintf("kill and wipe node %d", nd.ID))
				nd.Kill()
				if err := nd.Wipe(); err != nil {
					return nil, err
				}
				return func() error { e.H.Fault(fmt.Sprintf("restart node %d", nd.ID)); return nd.Restart() }, nil
			})
		}},
	{Name: "torn-tail", Doc: "SIGKILL a bucket leader, cut its newest segment in the middle of its last batch (a crash mid-write), restart it",
		// Seed 7 lost two acknowledged records: a leader restarted with
		// its tail cut kept leading and its followers truncated them
		// (docs/replication.md, a lost tail).
		Regressions: []uint64{7},
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 2*time.Second, 4*time.Second, func() (func() error, error) {
				b := e.Rng.Int32N(e.Log.Buckets)
				nd, err := e.waitLeader(ctx, b)
				if err != nil {
					return nil, err
				}
				e.H.Fault(fmt.Sprintf("kill node %d (bucket %d leader), tear its tail", nd.ID, b))
				nd.Kill()
				if _, _, err := nd.TearTail(e.Log.tbl.ID(), b); err != nil {
					e.C.logf("%v", err) // nothing written yet: only the kill
				}
				return func() error { e.H.Fault(fmt.Sprintf("restart node %d", nd.ID)); return nd.Restart() }, nil
			})
		}},
	{Name: "bit-flip", Doc: "flip a bit in a sealed segment of a bucket leader and read the bucket from the start: the damage is detected, never served, and repaired from a peer",
		Props: map[string]string{"log.segment.bytes": "64KiB"},
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 3*time.Second, 3*time.Second, func() (func() error, error) {
				b := e.Rng.Int32N(e.Log.Buckets)
				nd, err := e.waitLeader(ctx, b)
				if err != nil {
					return nil, err
				}
				if _, _, err := nd.FlipBit(e.Log.tbl.ID(), b, e.Rng); err != nil {
					e.C.logf("%v", err)
					return func() error { return nil }, nil
				}
				e.H.Fault(fmt.Sprintf("bit flip on node %d (bucket %d leader)", nd.ID, b))
				// Read the bucket from its start: the leader meets the damage.
				if _, err := e.Log.Check(ctx); err != nil {
					e.C.logf("reading through the damage: %v", err)
				}
				return func() error { return nil }, nil
			})
		}},
	{Name: "disk-full", Doc: "fill a follower's disk: its writes fail and it stops, nothing acknowledged is lost; free the space and restart it",
		Setup: func(o *Options) { o.DiskBytes = 512 << 20 },
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 4*time.Second, 3*time.Second, func() (func() error, error) {
				leader, err := e.waitLeader(ctx, 0)
				if err != nil {
					return nil, err
				}
				others := e.others(leader.ID)
				nd := e.C.Node(others[e.Rng.IntN(len(others))])
				e.H.Fault(fmt.Sprintf("fill node %d's disk", nd.ID))
				if err := nd.FillDisk(64 << 10); err != nil {
					return nil, err
				}
				return func() error {
					e.H.Fault(fmt.Sprintf("free node %d's disk", nd.ID))
					if err := nd.FreeDisk(); err != nil {
						return err
					}
					if !nd.Running() || stopped(nd) {
						nd.Kill()
						return nd.Restart()
					}
					return nil
				}, nil
			})
		}},
	{Name: "s3-unreachable", Doc: "tier to S3 and cut every node off from it for a while: uploads fail and are retried, nothing is deleted locally, the remote log catches up after",
		Setup: func(o *Options) { o.S3 = true },
		Props: map[string]string{"log.segment.bytes": "64KiB", "log.local.segments": "1"},
		Faults: func(ctx context.Context, e *Env) error {
			return cycle(ctx, e, 4*time.Second, 3*time.Second, func() (func() error, error) {
				e.H.Fault("block S3")
				if err := e.C.BlockS3(ctx); err != nil {
					return nil, err
				}
				return func() error { e.H.Fault("unblock S3"); return e.C.UnblockS3(context.Background()) }, nil
			})
		}},
	{Name: "lake-under-faults", Doc: "tier the log table into the lake on S3 (datalake.freshness 1s) with log.ttl 3s, so a read from the start " +
		"goes through the lake's files and then the log: SIGKILL or SIGSTOP a bucket leader, or cut every node off from S3, while it tiers; " +
		"the final read from the start (the union read) must hold every acknowledged record once, at its offset",
		Setup:  func(o *Options) { o.S3 = true },
		Props:  map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s", "log.ttl": "3s", "log.segment.bytes": "64KiB"},
		Faults: every(4*time.Second, 2*time.Second, anyOf(killBucketLeader, pauseBucketLeader, blockS3))},
	{Name: "slow-network", Doc: "drop 10% of a bucket leader's packets (and add 50 ms of latency where the kernel has netem), heal",
		Faults: func(ctx context.Context, e *Env) error {
			netem := e.C.HasNetem(ctx)
			return cycle(ctx, e, 4*time.Second, 2*time.Second, func() (func() error, error) {
				nd, err := e.waitLeader(ctx, e.Rng.Int32N(e.Log.Buckets))
				if err != nil {
					return nil, err
				}
				e.H.Fault(fmt.Sprintf("node %d (bucket leader): 10%% loss, netem %v", nd.ID, netem))
				if err := e.C.Loss(ctx, nd.ID, 10); err != nil {
					return nil, err
				}
				if netem {
					if err := e.C.Netem(ctx, nd.ID, 50*time.Millisecond, 0); err != nil {
						return nil, err
					}
				}
				return func() error {
					e.H.Fault("heal")
					if netem {
						if err := e.C.Netem(context.Background(), nd.ID, 0, 0); err != nil {
							return err
						}
					}
					return e.C.Heal(context.Background())
				}, nil
			})
		}},
	{Name: "reassign-under-faults", Doc: "on 4 nodes (replication 3, so each move takes a replica to a node that did not hold it, and later ones bring it back), " +
		"move random buckets of the log and key tables to random 3-node targets (two at once, a third queued; half throttled to 512 KiB/s), cancel some, " +
		"while SIGKILLing and restarting, or cutting off, the metadata leader, a bucket leader or any node; the end waits for every move to finish",
		Setup:  func(o *Options) { o.Nodes = reassignNodes },
		Faults: reassignUnderFaults},
	{Name: "partitioned-log-under-faults", Doc: "the log table partitioned by day (dt): every second a new day opens, its partition created beforehand " +
		"or by the first writer that meets it, and the oldest of the 3 days written to closes: kept, or dropped while writes to it may be in flight, " +
		"or kept while an older one is dropped; meanwhile SIGKILL or SIGSTOP a partition's bucket leader, cut it or the metadata leader off, " +
		"or split the nodes two against one; checked per partition and bucket, the dropped partitions' records excluded and their folders gone from every node",
		PartitionedLog: true,
		Faults: every(4*time.Second, 2*time.Second,
			anyOf(killBucketLeader, pauseBucketLeader, isolateMetaLeader, splitMajority, cutBucketLeader))},
}

// stopped says whether a node's process exited by itself (a node whose
// log failed stops).
func stopped(nd *Node) bool {
	nd.mu.Lock()
	exited := nd.exited
	nd.mu.Unlock()
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// Find returns the scenario named name.
func Find(name string) (Scenario, bool) {
	i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, false
	}
	return Scenarios[i], true
}
