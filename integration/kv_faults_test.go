package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// kvInput is one operation on a key: a put of a unique value, or a read.
type kvInput struct {
	put   bool
	key   int64
	value int64 // put: the value written
}

// kvModel is a register per key (0: absent). Puts retried with the same
// writer sequence until acknowledged take effect exactly once, so every
// operation in the history has a definite outcome.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int64][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvInput)
		if in.put {
			return true, in.value
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		if in.put {
			return fmt.Sprintf("put(%d, %d)", in.key, in.value)
		}
		return fmt.Sprintf("get(%d) -> %d", in.key, output)
	},
}

// TestKVModel checks the checker catches a lost upsert and a stale read.
func TestKVModel(t *testing.T) {
	op := func(in kvInput, call, ret int64, out int64) porcupine.Operation {
		return porcupine.Operation{Input: in, Call: call, Output: out, Return: ret}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"put then get", []porcupine.Operation{op(kvInput{true, 1, 5}, 0, 1, 0), op(kvInput{false, 1, 0}, 2, 3, 5)}, true},
		{"lost put", []porcupine.Operation{op(kvInput{true, 1, 5}, 0, 1, 0), op(kvInput{false, 1, 0}, 2, 3, 0)}, false},
		{"stale read", []porcupine.Operation{op(kvInput{true, 1, 5}, 0, 1, 0), op(kvInput{true, 1, 6}, 2, 3, 0), op(kvInput{false, 1, 0}, 4, 5, 5)}, false},
		{"concurrent put", []porcupine.Operation{op(kvInput{true, 1, 5}, 0, 10, 0), op(kvInput{false, 1, 0}, 2, 3, 5), op(kvInput{false, 1, 0}, 4, 5, 5)}, true},
		{"flicker", []porcupine.Operation{op(kvInput{true, 1, 5}, 0, 10, 0), op(kvInput{false, 1, 0}, 2, 3, 5), op(kvInput{false, 1, 0}, 4, 5, 0)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(kvModel, tc.ops); got != tc.ok {
				t.Fatalf("linearizable = %v, want %v", got, tc.ok)
			}
		})
	}
}

// kvCaller sends raw requests to whichever node leads bucket 0, retrying
// on any error until an attempt succeeds or the deadline passes.
type kvCaller struct {
	t       testing.TB
	c       *Cluster
	pool    *transport.Pool
	tableID uint64
	next    int // node to try first
}

func (k *kvCaller) do(ctx context.Context, deadline time.Duration, fn func(ctx context.Context, tablet pb.DRPCTabletClient) error) error {
	end := time.Now().Add(deadline)
	var err error
	for time.Now().Before(end) && ctx.Err() == nil {
		nd := k.c.Nodes[k.next%len(k.c.Nodes)]
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = fn(actx, pb.NewDRPCTabletClient(k.pool.Conn(nd.Addr)))
		cancel()
		if err == nil {
			return nil
		}
		k.next++
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return err
}

// TestKVLinearizable runs upserts and linearizable lookups of a few keys
// from several clients while the bucket's leader is SIGKILLed, SIGSTOPped
// and restarted; the history must be linearizable per key.
func TestKVLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "lin"); err != nil {
		t.Fatal(err)
	}
	info, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "lin", Name: "kv", Schema: kvWireSchema,
		PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()

	start := time.Now()
	var mu sync.Mutex
	var ops []porcupine.Operation
	var done atomic.Int64
	var stop atomic.Bool
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	const keys = 4
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			caller := &kvCaller{t: t, c: c, pool: pool, tableID: info.ID, next: w}
			writerID, seq := int64(5000+w), int32(0)
			for n := int64(1); !stop.Load(); n++ {
				in := kvInput{key: rng.Int64N(keys)}
				var out int64
				var err error
				call := time.Now()
				if rng.IntN(2) == 0 {
					in.put, in.value = true, int64(w+1)*1_000_000+n
					batch := kvBatch(t, record.BatchOptions{SchemaID: 1, HasWriter: true, WriterID: writerID, Sequence: seq},
						[]record.ChangeType{record.UpdateAfter}, [][]byte{encodeKVRow(t, kvRow{in.key, nil, &in.value})})
					err = caller.do(ctx, 60*time.Second, func(ctx context.Context, tablet pb.DRPCTabletClient) error {
						_, err := tablet.PutKv(ctx, &pb.PutKvRequest{TableId: info.ID, Acks: -1, Batch: batch})
						return err
					})
					seq++
				} else {
					err = caller.do(ctx, 60*time.Second, func(ctx context.Context, tablet pb.DRPCTabletClient) error {
						resp, err := tablet.Lookup(ctx, &pb.LookupRequest{TableId: info.ID, Keys: [][]byte{keyOf(t, in.key)}, Linearizable: true})
						if err != nil {
							return err
						}
						out = 0
						if row := unpackRows(resp)[0]; len(row) > 0 {
							s, _ := record.ParseSchema(kvWireSchema)
							out = record.NewRowView(s, row).Int64(2)
						}
						return nil
					})
				}
				if err != nil {
					if ctx.Err() == nil {
						e := fmt.Errorf("client %d: %v gave no answer within 60 s: %w", w, in, err)
						failed.CompareAndSwap(nil, &e)
					}
					return
				}
				ret := time.Now()
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: w, Input: in, Output: out,
					Call: call.Sub(start).Nanoseconds(), Return: ret.Sub(start).Nanoseconds()})
				mu.Unlock()
				done.Add(1)
			}
		})
	}
	progress := func(what string) {
		before := done.Load()
		waitFor(t, 60*time.Second, what, func() bool { return done.Load() >= before+50 || failed.Load() != nil })
		if p := failed.Load(); p != nil {
			t.Fatal(*p)
		}
	}
	leaderNode := func() *Node {
		_, addr := bucketLeader(t, ctx, c, "lin", "kv", 0)
		nd := c.NodeAt(addr)
		if nd == nil {
			t.Fatalf("no node at %s", addr)
		}
		return nd
	}
	progress("operations before any fault")
	for round := range 4 {
		nd := leaderNode()
		if round%2 == 0 {
			t.Logf("round %d: SIGKILL bucket leader node %d", round, nd.ID)
			c.Kill(nd)
			progress("operations with the old leader dead")
			c.Restart(nd)
		} else {
			t.Logf("round %d: SIGSTOP bucket leader node %d", round, nd.ID)
			c.Pause(nd)
			progress("operations with the old leader paused")
			c.Resume(nd)
		}
		progress("operations after the fault healed")
	}
	stop.Store(true)
	wg.Wait()
	if p := failed.Load(); p != nil {
		t.Fatal(*p)
	}
	t.Logf("%d operations", len(ops))
	res, _ := porcupine.CheckOperationsVerbose(kvModel, ops, time.Minute)
	if res != porcupine.Ok {
		t.Fatalf("key history is not linearizable (%v)", res)
	}
}

// TestKVRestartAll upserts and deletes keys with acks=all, SIGKILLs every
// node at once and restarts them: every acknowledged write is in the
// lookups afterwards, and the changelog replayed from offset 0 equals the
// table.
func TestKVRestartAll(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "rs"); err != nil {
		t.Fatal(err)
	}
	info, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "rs", Name: "kv", Schema: kvWireSchema,
		PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	caller := &kvCaller{t: t, c: c, pool: pool, tableID: info.ID}
	const keys = 3000
	want := map[int64]int64{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		var rows [][]byte
		var changes []record.ChangeType
		for range 200 {
			id := rng.Int64N(keys)
			if rng.IntN(5) == 0 {
				rows = append(rows, encodeKVRow(t, kvRow{id: id}))
				changes = append(changes, record.Delete)
				delete(want, id)
				continue
			}
			v := int64(round*1000 + len(rows))
			rows = append(rows, encodeKVRow(t, kvRow{id, str("r"), &v}))
			changes = append(changes, record.UpdateAfter)
			want[id] = v
		}
		batch := kvBatch(t, record.BatchOptions{SchemaID: 1, HasWriter: true, WriterID: 9, Sequence: int32(round)}, changes, rows)
		if err := caller.do(ctx, 30*time.Second, func(ctx context.Context, tablet pb.DRPCTabletClient) error {
			_, err := tablet.PutKv(ctx, &pb.PutKvRequest{TableId: info.ID, Acks: -1, Batch: batch})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, nd := range c.Nodes {
		c.Kill(nd)
	}
	for _, nd := range c.Nodes {
		c.Restart(nd)
	}
	c.WaitLeader(30 * time.Second)
	s, _ := record.ParseSchema(kvWireSchema)
	var got map[int64]int64
	var keyList [][]byte
	for id := range int64(keys) {
		keyList = append(keyList, keyOf(t, id))
	}
	if err := caller.do(ctx, 30*time.Second, func(ctx context.Context, tablet pb.DRPCTabletClient) error {
		resp, err := tablet.Lookup(ctx, &pb.LookupRequest{TableId: info.ID, Keys: keyList, Linearizable: true})
		if err != nil {
			return err
		}
		got = map[int64]int64{}
		for i, row := range unpackRows(resp) {
			if len(row) > 0 {
				got[int64(i)] = record.NewRowView(s, row).Int64(2)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d keys after the restart, want %d", len(got), len(want))
	}
	for id, v := range want {
		if got[id] != v {
			t.Fatalf("key %d: %d after the restart, want %d", id, got[id], v)
		}
	}
	// The changelog replayed from the start gives the same table.
	replay := map[int64]int64{}
	_, addr := bucketLeader(t, ctx, c, "rs", "kv", 0)
	tablet := pb.NewDRPCTabletClient(pool.Conn(addr))
	readChangelog(t, ctx, tablet, info.ID, func(rec record.Record) {
		v := record.NewRowView(s, rec.Data)
		switch rec.Change {
		case record.Insert, record.UpdateAfter:
			replay[v.Int64(0)] = v.Int64(2)
		case record.Delete:
			delete(replay, v.Int64(0))
		}
	})
	if len(replay) != len(want) {
		t.Fatalf("changelog replay holds %d keys, the table %d", len(replay), len(want))
	}
	for id, v := range want {
		if replay[id] != v {
			t.Fatalf("changelog replay: key %d = %d, want %d", id, replay[id], v)
		}
	}
}

// TestKVRebuildsMissingStore deletes a follower's KV database (the stores
// of all its primary-key replicas) while the node is down: on restart the
// replica rebuilds its store from its log, and once it leads the bucket it
// serves every key.
func TestKVRebuildsMissingStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	tbl := openKV(t, ctx, cl, "rb", "kv", kvClientSchema, []string{"a", "b"}, nil, 1)
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 5000
	var futures []*client.UpsertFuture
	for a := range keys {
		f, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":"k","name":"n","v":%d}`, a, a))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w.Close(ctx)
	placement := func() client.Bucket {
		desc, err := cl.Admin().DescribeTable(ctx, "rb", "kv")
		if err != nil {
			t.Fatal(err)
		}
		return desc.Placement[0]
	}
	var target *Node
	for _, nd := range c.Nodes {
		if nd.ID != placement().Leader {
			target = nd
			break
		}
	}
	c.Stop(target)
	kvDir := filepath.Join(target.DataDir, "tablet", "kv")
	if _, err := os.Stat(kvDir); err != nil {
		t.Fatalf("the follower has no KV database at %s: %v", kvDir, err)
	}
	if err := os.RemoveAll(kvDir); err != nil {
		t.Fatal(err)
	}
	c.Restart(target)
	waitISRFull(t, ctx, cl, "rb", "kv")
	// Move leadership to the rebuilt replica.
	for placement().Leader != target.ID {
		leader := c.Nodes[placement().Leader-1]
		c.Kill(leader)
		waitFor(t, 30*time.Second, "a new bucket leader", func() bool { l := placement().Leader; return l != 0 && l != leader.ID })
		c.Restart(leader)
		waitISRFull(t, ctx, cl, "rb", "kv")
	}
	l, err := tbl.NewLookuper(client.LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.LookupBatch(ctx, kvClientKeys(t, tbl, keys))
	if err != nil {
		t.Fatal(err)
	}
	for a, row := range rows {
		if row == nil || record.NewRowView(tbl.Schema(), row).Int64(3) != int64(a) {
			t.Fatalf("key %d on the rebuilt leader: %s", a, rowJSONOf(t, tbl, row))
		}
	}
}

// TestKVBackpressure: while both followers are stopped, acks=1 upserts
// pile up uncommitted on the leader until its pre-write buffer is full and
// it answers UNAVAILABLE (retriable) instead of growing without bound; once
// the followers are back (or fenced), writes flow again and every
// acknowledged row is there.
func TestKVBackpressure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--kv-buffer-bytes", "1048576"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "bp"); err != nil {
		t.Fatal(err)
	}
	info, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "bp", Name: "kv", Schema: kvWireSchema,
		PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	_, addr := bucketLeader(t, ctx, c, "bp", "kv", 0)
	tablet := pb.NewDRPCTabletClient(pool.Conn(addr))
	name := strings.Repeat("n", 1000)
	batchOf := func(first int) []byte {
		var rows []kvRow
		for i := range 200 {
			rows = append(rows, kvRow{int64(first + i), &name, i64(int64(first + i))})
		}
		return upserts(t, rows...)
	}
	waitFor(t, 20*time.Second, "the leader to take an upsert", func() bool {
		_, err := tablet.PutKv(ctx, &pb.PutKvRequest{TableId: info.ID, Acks: -1, Batch: batchOf(0)})
		return err == nil
	})
	var followers []*Node
	for _, nd := range c.Nodes {
		if nd.Addr != addr {
			followers = append(followers, nd)
			c.Pause(nd)
		}
	}
	acked := 200
	refused := false
	for n := 1; n <= 50 && !refused; n++ {
		_, err := tablet.PutKv(ctx, &pb.PutKvRequest{TableId: info.ID, Acks: 1, Batch: batchOf(n * 200)})
		switch {
		case err == nil:
			acked = (n + 1) * 200
		case wireCode(err) == pb.ErrorCode_ERROR_CODE_UNAVAILABLE:
			refused = true
			t.Logf("refused after %d rows: %v", acked, err)
		default:
			t.Fatalf("batch %d: %v", n, err)
		}
	}
	for _, nd := range followers {
		c.Resume(nd)
	}
	if !refused {
		t.Fatalf("the leader took %d uncommitted rows of 1 KiB past a 1 MiB buffer", acked)
	}
	next := acked
	waitFor(t, 60*time.Second, "acks=all upserts to succeed again", func() bool {
		_, err := tablet.PutKv(ctx, &pb.PutKvRequest{TableId: info.ID, Acks: -1, Batch: batchOf(next)})
		return err == nil
	})
	acked = next + 200
	var keys [][]byte
	for id := range acked {
		keys = append(keys, keyOf(t, int64(id)))
	}
	resp, err := tablet.Lookup(ctx, &pb.LookupRequest{TableId: info.ID, Keys: keys, Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	for id, row := range unpackRows(resp) {
		if len(row) == 0 {
			t.Fatalf("acknowledged key %d missing", id)
		}
	}
}
