package replica

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport/pb"
)

// localLeader is a leader node reached in-process: its Fetch is the
// leader manager's. It serves no Fetches stream, so the fetcher sends
// single calls.
type localLeader struct {
	pb.DRPCTabletClient
	m *Manager
}

func (l localLeader) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	return l.m.Fetch(ctx, req)
}

func (l localLeader) Fetches(context.Context) (pb.DRPCTablet_FetchesClient, error) {
	return nil, errors.New(`protocol error: unknown rpc: "/floe.v1.Tablet/Fetches"`)
}

// gatedKVTables makes primary-key replicas whose KV side restores a
// snapshot only once the gate opens, as a large snapshot's download takes
// long: entered closes when a restore starts.
type gatedKVTables struct {
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
	// deaf: a restore does not notice its context ending.
	deaf bool
}

func newGatedKVTables() *gatedKVTables {
	return &gatedKVTables{entered: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gatedKVTables) Table(*pb.TableRecord, string, record.Schema) (KVTable, error) { return g, nil }
func (g *gatedKVTables) Open(*Replica) (KV, error)                                     { return &gatedKV{g: g}, nil }

// gatedKV is a KV side that holds no rows: it only says which offset it
// applied up to, as a restore left it.
type gatedKV struct {
	g       *gatedKVTables
	mu      sync.Mutex
	applied int64
}

func (kv *gatedKV) Restore(ctx context.Context, _ tiering.ObjectStore, _ string) (int64, error) {
	kv.g.once.Do(func() { close(kv.g.entered) })
	done := ctx.Done()
	if kv.g.deaf {
		done = nil
	}
	select {
	case <-kv.g.gate:
	case <-done:
		return 0, ctx.Err()
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.applied = catchUpSnapshotOffset
	return kv.applied, nil
}

func (kv *gatedKV) SetTable(KVTable) {}

func (kv *gatedKV) AppliedOffset() (int64, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.applied, nil
}

func (kv *gatedKV) DropAbove(end int64) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.applied > end {
		kv.applied = 0
	}
}

func (kv *gatedKV) Put(context.Context, *Turn, record.Batch, []int32, int32, time.Duration) (*pb.ProduceResponse, error) {
	return nil, errors.New("gatedKV: no writes")
}
func (kv *gatedKV) Lookup(context.Context, *pb.LookupRequest) (*pb.LookupResponse, error) {
	return nil, errors.New("gatedKV: no lookups")
}
func (kv *gatedKV) PrefixLookup(context.Context, *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error) {
	return nil, errors.New("gatedKV: no lookups")
}
func (kv *gatedKV) HWMoved()                {}
func (kv *gatedKV) SetLeading(leading bool) {}
func (kv *gatedKV) Snapshot(context.Context, tiering.KVSnapshotConfig, int32, []string) (tiering.KVSnapshotResult, error) {
	return tiering.KVSnapshotResult{}, errors.New("gatedKV: no snapshots")
}
func (kv *gatedKV) Close(bool) error { return nil }

// catchUpSnapshotOffset is where the primary-key bucket's leader log
// starts and its KV snapshot ends.
const catchUpSnapshotOffset = 25

// TestCatchUpDoesNotStallOtherBuckets: node 1 follows two buckets on node
// 2. The primary-key bucket's follower is below its leader's log start and
// restores a KV snapshot that takes long (its download blocks until the
// test lets it go); meanwhile the log table's follower keeps up with its
// leader's new writes. Before, the fetcher restored inside its fetch loop,
// holding the bucket's produce lock, and every other bucket followed from
// that leader stopped replicating until the restore ended. Once the
// restore ends, the restored bucket's log starts over at the snapshot's
// offset and it follows its leader again.
func TestCatchUpDoesNotStallOtherBuckets(t *testing.T) {
	c := startCatchUpCluster(t, false)
	kv := c.kv
	leader, follower := c.leader, c.follower
	logBucket, pkBucket := catchUpLogBucket, catchUpPKBucket
	defer close(kv.gate)
	select {
	case <-kv.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the primary-key follower did not start restoring its snapshot")
	}

	// The restore is under way: the log table's follower keeps up with
	// its leader's writes all the same.
	lr, fr := leader.replica(logBucket), follower.replica(logBucket)
	start := time.Now()
	for i := range 5 {
		produceLeader(t, lr, writerBatchN(t, 100, int32(i), 3, "x"))
	}
	waitFor(t, 10*time.Second, "the log table's follower to copy its leader's writes while the other bucket restores", func() bool {
		return fr.log.EndOffset() == lr.log.EndOffset()
	})
	t.Logf("log table's follower caught up with 5 new batches in %v while the other bucket restored", time.Since(start))

	kv.gate <- struct{}{}
	pr := follower.replica(pkBucket)
	waitFor(t, 10*time.Second, "the restored follower's log to start over at the snapshot's offset", func() bool {
		return pr.log.StartOffset() == catchUpSnapshotOffset && pr.log.EndOffset() == catchUpSnapshotOffset
	})
}

// Buckets of the catch-up tests: a log table's and a primary-key table's.
var catchUpLogBucket, catchUpPKBucket = BucketID{TableID: 7}, BucketID{TableID: 8}

// catchUpCluster is node 2 leading both buckets and node 1 following
// them, its primary-key replica below its leader's log start.
type catchUpCluster struct {
	leader, follower *Manager
	kv               *gatedKVTables // the follower's
	update           *pb.MetadataUpdate
}

func startCatchUpCluster(t *testing.T, deafRestore bool) *catchUpCluster {
	t.Helper()
	logBucket, pkBucket := catchUpLogBucket, catchUpPKBucket
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	update := &pb.MetadataUpdate{Full: true, Index: 10,
		Nodes: []*pb.NodeRecord{{Id: 1, RpcAddress: "node1", NodeEpoch: 1}, {Id: 2, RpcAddress: "node2", NodeEpoch: 1}},
		Tables: []*pb.TableRecord{
			{Id: logBucket.TableID, Database: "db", Name: "events", Buckets: 1, Replication: 2,
				Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}},
			{Id: pkBucket.TableID, Database: "db", Name: "rows", Buckets: 1, Replication: 2, PrimaryKey: []string{"k"},
				Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "k", Type: "STRING"}, {Name: "v", Type: "STRING", Nullable: true}}}}},
		},
		Buckets: []*pb.BucketRecord{
			{TableId: logBucket.TableID, Leader: 2, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{2, 1}, Isr: []uint32{2, 1}},
			{TableId: pkBucket.TableID, Leader: 2, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{2, 1}, Isr: []uint32{2},
				KvSnapshots: []*pb.KVSnapshot{{Offset: catchUpSnapshotOffset, ManifestKey: "kv/8/0/snapshot"}}},
		},
	}
	leader := newTestManager(t, t.TempDir(), func(c *Config) { c.NodeID = 2; c.KV = newGatedKVTables() })
	leader.Apply(update)
	// Retention took the primary-key bucket's changelog below the
	// snapshot's offset off the leader's disk.
	if err := leader.replica(pkBucket).log.Reset(catchUpSnapshotOffset); err != nil {
		t.Fatal(err)
	}
	kv := newGatedKVTables()
	kv.deaf = deafRestore
	follower := newTestManager(t, t.TempDir(), func(c *Config) {
		c.KV, c.RemoteStore, c.Dialer = kv, store, fixedDialer{localLeader{m: leader}}
	})
	follower.Apply(update)
	return &catchUpCluster{leader: leader, follower: follower, kv: kv, update: update}
}

// TestCatchUpDroppedOnRoleChange: a follower whose leader epoch changes
// while it restores a KV snapshot drops the restore: its log is not
// started over at the snapshot's offset, and its store, restored past
// its log's end, is emptied to be rebuilt from the log. The replica then
// rejoins its fetcher.
func TestCatchUpDroppedOnRoleChange(t *testing.T) {
	c := startCatchUpCluster(t, true)
	select {
	case <-c.kv.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the primary-key follower did not start restoring its snapshot")
	}
	pr := c.follower.replica(catchUpPKBucket)
	if !pr.catchingUp() {
		t.Fatal("the restoring replica is not marked as catching up")
	}
	pr.assign(&pb.BucketRecord{TableId: catchUpPKBucket.TableID, Leader: 2, LeaderEpoch: 2, BucketEpoch: 2,
		Replicas: []uint32{2, 1}, Isr: []uint32{2}}, 11)
	c.kv.gate <- struct{}{} // the restore completes, for the old epoch
	waitFor(t, 10*time.Second, "the catch-up task to end", func() bool { return !pr.catchingUp() })
	if start, end := pr.log.StartOffset(), pr.log.EndOffset(); start != 0 || end != 0 {
		t.Fatalf("log [%d, %d) after a restore for an old epoch, want it left at [0, 0)", start, end)
	}
	if applied, _ := pr.kv.AppliedOffset(); applied != 0 {
		t.Fatalf("store applied up to %d after its restore was dropped, want it emptied", applied)
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
