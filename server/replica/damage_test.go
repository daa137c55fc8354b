package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// damageMeta records damage reports and answers each with the bucket the
// controller would commit: the reporter out of the ISR and leadership.
type damageMeta struct {
	noMeta
	reports chan *pb.ReportDamagedReplica
	answer  *pb.BucketRecord
}

func (m damageMeta) ReportDamaged(_ context.Context, report *pb.ReportDamagedReplica, _ []byte) (*pb.BucketRecord, error) {
	m.reports <- report
	return m.answer, nil
}

// heldFromLeader is node 2 leading the bucket: it refuses fetches and
// answers ListOffsets saying its readable copies start at heldFrom.
type heldFromLeader struct {
	refusingLeader
	heldFrom int64
}

func (l *heldFromLeader) ListOffsets(context.Context, *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	return &pb.ListOffsetsResponse{HeldFrom: l.heldFrom}, nil
}

// managedReplica opens the test bucket's replica in a manager whose
// metadata client is meta, registered as the manager's own; node 2, at a
// known address, leads with every offset held.
func managedReplica(t *testing.T, meta MetaClient) (*Manager, *Replica) {
	t.Helper()
	return managedReplicaIn(t, t.TempDir(), meta)
}

// managedReplicaIn is managedReplica over the data folder dir.
func managedReplicaIn(t *testing.T, dir string, meta MetaClient) (*Manager, *Replica) {
	t.Helper()
	return managedReplicaWith(t, dir, meta, &heldFromLeader{})
}

// managedReplicaWith is managedReplicaIn with leader as node 2.
func managedReplicaWith(t *testing.T, dir string, meta MetaClient, leader pb.DRPCTabletClient) (*Manager, *Replica) {
	t.Helper()
	m := newTestManager(t, dir, func(c *Config) { c.Meta = meta; c.Dialer = fixedDialer{leader} })
	m.mu.Lock()
	m.nodes[2] = &pb.NodeRecord{Id: 2, RpcAddress: "127.0.0.1:1"}
	m.mu.Unlock()
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.tables[testBucket.TableID] = r.info.Load()
	m.mu.Unlock()
	return m, r
}

// damageLeader makes r, at node epoch 7, the leader of epoch 3 with ISR
// {1} over two batches of five records, then assigns isr (when it is not
// {1}) and flips a byte inside the first batch's records.
func damageLeader(t *testing.T, r *Replica, isr []uint32) {
	t.Helper()
	r.setNodeEpoch(7)
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 3, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 9)
	produceLeader(t, r, writerBatchN(t, 100, 0, 5, strings.Repeat("a", 100)))
	produceLeader(t, r, writerBatchN(t, 100, 1, 5, strings.Repeat("b", 100)))
	if len(isr) != 1 || isr[0] != 1 {
		r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
			BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: isr}, 10)
	}
	flipByte(t, r.dir, record.HeaderSize+20)
}

// waitUndamaged waits until r no longer counts itself damaged (it cut its
// log, or settled keeping it), failing with why after 10 s.
func waitUndamaged(t *testing.T, r *Replica, why string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.isDamaged() {
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// flipByte flips one byte of the replica's first segment, as a disk that
// returns wrong data would.
func flipByte(t *testing.T, dir string, pos int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment in %s: %v", dir, err)
	}
	f, err := os.OpenFile(segs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedLeaderLeavesAndRefetches: a leader whose log turns out damaged
// when a consumer reads it answers with a retriable NOT_LEADER (not a
// CORRUPT that would stop the consumer), reports the damage once with its
// node epoch, and, once the metadata shows it out of the ISR under another
// leader, cuts its log back to the damaged offset so that it fetches the
// rest again. Before, the damaged range stayed unreadable for good.
func TestDamagedLeaderLeavesAndRefetches(t *testing.T) {
	next := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 2, LeaderEpoch: 4,
		BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: []uint32{2}}
	meta := damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10), answer: next}
	m, r := managedReplica(t, meta)
	r.setNodeEpoch(7)
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 3, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 9)
	produceLeader(t, r, writerBatchN(t, 100, 0, 5, strings.Repeat("a", 100)))
	produceLeader(t, r, writerBatchN(t, 100, 1, 5, strings.Repeat("b", 100)))
	if r.log.EndOffset() != 10 {
		t.Fatalf("log end %d, want 10", r.log.EndOffset())
	}
	// Node 2 joins the ISR: it holds the records too, so the damaged
	// replica may leave and cut its log.
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: []uint32{1, 2}}, 10)
	next.BucketEpoch = 5
	flipByte(t, r.dir, record.HeaderSize+20) // inside the first batch's records

	resp, err := m.Fetch(t.Context(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if fb := resp.Buckets[0]; fb.ErrorCode != pb.ErrorCode_ERROR_CODE_NOT_LEADER || !strings.Contains(fb.Error, "damaged at offset 0") {
		t.Fatalf("consumer read of the damaged batch: %v %q, want NOT_LEADER naming the damage", fb.ErrorCode, fb.Error)
	}
	select {
	case rep := <-meta.reports:
		if rep.NodeId != 1 || rep.NodeEpoch != 7 || rep.Offset != 0 {
			t.Fatalf("report %v, want node 1 at node epoch 7, offset 0", rep)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the damage was not reported")
	}
	// The cut is done once the log ends at the damage and the replica no
	// longer counts itself damaged.
	deadline := time.Now().Add(10 * time.Second)
	for r.log.EndOffset() != 0 || r.isDamaged() {
		if time.Now().After(deadline) {
			t.Fatalf("log end %d, damaged %v: the damaged log was not cut back to offset 0", r.log.EndOffset(), r.isDamaged())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case rep := <-meta.reports:
		t.Fatalf("reported twice: %v", rep)
	default:
	}
}

// TestDamagedReplicaDoesNotFetch: until its damage is cut away, a replica
// asks its leader for nothing: its log end would claim the damaged range,
// and the leader could count it caught up and take it back into the ISR
// before the cut, an in-sync replica without the data.
func TestDamagedReplicaDoesNotFetch(t *testing.T) {
	leader := &refusingLeader{}
	m, r := followerOfNode2(t, leader, []uint32{2})
	r.mu.Lock()
	r.damage.at = 0
	r.mu.Unlock()
	f := &fetcher{m: m, leader: 2, ctx: t.Context()}
	if err := f.fetchOnce([]*Replica{r}); !errors.Is(err, errNothingToFetch) {
		t.Fatalf("fetchOnce with only a damaged replica = %v, want errNothingToFetch", err)
	}
	if leader.fetches != 0 {
		t.Fatalf("%d fetches sent for a damaged replica", leader.fetches)
	}
}

// TestLeaderThatLostCommittedRecordsStepsDown: a leader restarted with a
// log that ends before records it had committed (its disk dropped fsynced
// writes: a torn tail beyond a crash's reach) keeps leading in a new epoch.
// A follower's fetch from an earlier epoch carries a high watermark past
// that epoch's start: the leader must not answer with a divergence (the
// follower would truncate the committed records away, and they would be
// lost everywhere) but report itself damaged and refuse. A follower whose
// high watermark is not past it is served as before.
func TestLeaderThatLostCommittedRecordsStepsDown(t *testing.T) {
	next := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 2, LeaderEpoch: 5,
		BucketEpoch: 5, Replicas: []uint32{1, 2}, Isr: []uint32{2}}
	meta := damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10), answer: next}
	m, r := managedReplica(t, meta)
	r.setNodeEpoch(7)
	// Epoch 3 wrote 10 records; the node restarted having kept only 5 of
	// them (a follower committed all 10), and leads again in epoch 4.
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 3, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 9)
	produceLeader(t, r, writerBatchN(t, 100, 0, 5, "a"))
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 4,
		BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: []uint32{1, 2}}, 10)

	fetch := func(hw int64) *pb.FetchedBucket {
		resp, err := m.Fetch(t.Context(), &pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{
			TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 10, LeaderEpoch: 4, LastFetchedEpoch: 3,
			HighWatermark: hw}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Buckets[0]
	}
	// Not past the epoch's start (5): the usual divergence answer.
	if fb := fetch(5); !fb.Diverging || fb.DivergingEndOffset != 5 {
		t.Fatalf("fetch with high watermark 5: %+v, want a divergence at 5", fb)
	}
	select {
	case rep := <-meta.reports:
		t.Fatalf("reported damage for a follower behind nothing committed: %v", rep)
	default:
	}
	// Past it: committed records are missing here.
	fb := fetch(10)
	if fb.Diverging || fb.ErrorCode != pb.ErrorCode_ERROR_CODE_NOT_LEADER || !strings.Contains(fb.Error, "lost committed records") {
		t.Fatalf("fetch with high watermark 10: %+v, want NOT_LEADER naming the lost records and no divergence", fb)
	}
	select {
	case rep := <-meta.reports:
		if rep.NodeId != 1 || rep.Offset != 5 {
			t.Fatalf("report %v, want node 1 damaged from offset 5", rep)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lost records were not reported as damage")
	}
}

// TestFollowerWithoutBatchesIsNoEvidence: a follower that holds no batch
// (it started over at a KV snapshot's offset) names a high watermark at
// its log's start; that is no sign the leader lost anything.
func TestFollowerWithoutBatchesIsNoEvidence(t *testing.T) {
	meta := damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10)}
	m, r := managedReplica(t, meta)
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 0,
		BucketEpoch: 0, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 9)
	for i := range 4 {
		produceLeader(t, r, writerBatchN(t, 100, int32(i), 5, "a"))
	}
	resp, err := m.Fetch(t.Context(), &pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 15, LeaderEpoch: 0, LastFetchedEpoch: -1,
		HighWatermark: 15}}})
	if err != nil {
		t.Fatal(err)
	}
	if fb := resp.Buckets[0]; fb.Error != "" {
		t.Fatalf("fetch of a follower without batches: %v %q, want it served", fb.ErrorCode, fb.Error)
	}
	select {
	case rep := <-meta.reports:
		t.Fatalf("reported damage: %v", rep)
	default:
	}
}

// TestLeaderWithLostTailStepsDown: a replica restarted with a log that
// lost batches it had made durable (torn-tail chaos, seed 7: a leader
// killed, its newest segment cut inside its last acknowledged batch,
// restarted before the controller moved leadership, kept leading in a new
// epoch and its followers truncated two acknowledged records) refuses
// writes and follower fetches as a leader, reports the damage once it
// knows its assignment, and, out of the ISR under another leader, is
// repaired and fetches again.
func TestLeaderWithLostTailStepsDown(t *testing.T) {
	dir := t.TempDir()
	m0 := newTestManager(t, dir)
	r0 := openTestReplica(t, m0)
	lead(r0, 3)
	produceLeader(t, r0, writerBatchN(t, 100, 0, 5, strings.Repeat("a", 100)))
	last := produceLeader(t, r0, writerBatchN(t, 100, 1, 5, strings.Repeat("b", 100)))
	segs, _ := filepath.Glob(filepath.Join(r0.dir, "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	crashed := t.TempDir()
	copyDir(t, filepath.Dir(r0.dir), crashed) // the folder as a SIGKILL leaves it
	m0.Close()
	end := segmentEnd(t, Dir(crashed, testBucket))
	if err := os.Truncate(filepath.Join(Dir(crashed, testBucket), filepath.Base(segs[0])), end-10); err != nil {
		t.Fatal(err)
	}

	next := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 2, LeaderEpoch: 5,
		BucketEpoch: 5, Replicas: []uint32{1, 2}, Isr: []uint32{2}}
	meta := heldDamageMeta{damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10), answer: next}, make(chan struct{})}
	m, r := managedReplicaIn(t, crashed, meta)
	if r.log.EndOffset() != last.BaseOffset {
		t.Fatalf("reopened log ends at %d, want %d", r.log.EndOffset(), last.BaseOffset)
	}
	// Still the leader in the metadata, in a new epoch.
	m.applyBucket(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 4,
		BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: []uint32{1, 2}}, 9)
	if _, err := r.produce(t.Context(), nil, writerBatchN(t, 101, 0, 1, "c"), AcksLeader, time.Second); err == nil ||
		!strings.Contains(err.Error(), "lost its log's tail") {
		t.Fatalf("write to a leader that lost its tail: %v, want NOT_LEADER naming the lost tail", err)
	}
	fb := &pb.FetchBucket{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: last.LastOffset + 1,
		LeaderEpoch: 4, LastFetchedEpoch: 3}
	if err := r.serveFollower(2, 1, fb, 1<<20, &pb.FetchedBucket{}); err == nil || !strings.Contains(err.Error(), "lost its log's tail") {
		t.Fatalf("follower fetch from a leader that lost its tail: %v, want NOT_LEADER", err)
	}
	select {
	case rep := <-meta.reports:
		if rep.Offset != last.BaseOffset {
			t.Fatalf("report %v, want offset %d", rep, last.BaseOffset)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lost tail was not reported")
	}
	close(meta.release) // the controller answers: node 2 leads
	deadline := time.Now().Add(10 * time.Second)
	for r.isDamaged() {
		if time.Now().After(deadline) {
			t.Fatal("the replica stayed damaged under another leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldDamageMeta answers damage reports once released.
type heldDamageMeta struct {
	damageMeta
	release chan struct{}
}

func (m heldDamageMeta) ReportDamaged(ctx context.Context, report *pb.ReportDamagedReplica, id []byte) (*pb.BucketRecord, error) {
	m.reports <- report
	select {
	case <-m.release:
		return m.answer, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// copyDir copies a folder tree.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// segmentEnd is where the batches of the folder's only segment end.
func segmentEnd(t *testing.T, dir string) int64 {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for pos < len(data) {
		n, ok := record.PeekSize(data[pos:])
		if !ok || n == 0 || pos+n > len(data) {
			break
		}
		pos += n
	}
	return int64(pos)
}

// TestDamagedLastInSyncCopyKeepsItsLog: replicas [1, 2] with ISR {1}
// (min.insync.replicas 1: node 1 alone acknowledged the writes). A flipped
// bit in batch 0 of node 1's log must not cost the acknowledged batches
// after it: node 1 reports nothing, keeps leading and its whole log,
// answers CORRUPT for the damaged batch and serves the next one. Before,
// the report took node 1 out of the ISR and repairDamage cut its log back
// to offset 0.
func TestDamagedLastInSyncCopyKeepsItsLog(t *testing.T) {
	meta := damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10)}
	m, r := managedReplica(t, meta)
	damageLeader(t, r, []uint32{1})

	fetch := func(offset int64) *pb.FetchedBucket {
		t.Helper()
		resp, err := m.Fetch(t.Context(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{
			TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: offset}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Buckets[0]
	}
	if fb := fetch(0); fb.ErrorCode != pb.ErrorCode_ERROR_CODE_CORRUPT || !strings.Contains(fb.Error, "only in-sync copy") {
		t.Fatalf("read of the damaged batch on the last in-sync copy: %v %q, want CORRUPT naming the last copy", fb.ErrorCode, fb.Error)
	}
	if r.isDamaged() {
		t.Fatal("the last in-sync copy took up damage handling (a report, then a cut)")
	}
	if fb := fetch(5); fb.Error != "" || len(fb.Records) == 0 {
		t.Fatalf("read after the damaged batch: %v %q, %d bytes; want the second batch", fb.ErrorCode, fb.Error, len(fb.Records))
	}
	if role, _, _, _ := r.state(); role != replication.RoleLeader || r.log.EndOffset() != 10 {
		t.Fatalf("role %v, log end %d: want the leader keeping all 10 records", role, r.log.EndOffset())
	}
}

// TestDamageReportLeftUnchangedOnTheLastCopy: a replica that reported
// damage while the ISR was {1, 2} but finds, in the controller's answer,
// the ISR shrunk to itself (the controller refuses to take the last copy
// out) settles as the last copy: it keeps its log and leadership and stops
// counting itself damaged, so its reads answer CORRUPT from then on.
func TestDamageReportLeftUnchangedOnTheLastCopy(t *testing.T) {
	shrunk := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 5, Replicas: []uint32{1, 2}, Isr: []uint32{1}}
	meta := damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10), answer: shrunk}
	m, r := managedReplica(t, meta)
	damageLeader(t, r, []uint32{1, 2})

	resp, err := m.Fetch(t.Context(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if fb := resp.Buckets[0]; fb.ErrorCode != pb.ErrorCode_ERROR_CODE_NOT_LEADER {
		t.Fatalf("read of the damaged batch with node 2 in sync: %v %q, want NOT_LEADER", fb.ErrorCode, fb.Error)
	}
	if rep := <-meta.reports; rep.LostTail || rep.Offset != 0 {
		t.Fatalf("report %v, want damage at offset 0", rep)
	}
	waitUndamaged(t, r, "the replica did not settle as the last copy after the controller left the bucket unchanged")
	if role, _, _, _ := r.state(); role != replication.RoleLeader || r.log.EndOffset() != 10 {
		t.Fatalf("role %v, log end %d: want the leader keeping all 10 records", role, r.log.EndOffset())
	}
}

// TestDamageBelowTheLeadersCopiesIsKept: the replica found damage at
// offset 0 and left the ISR for node 2, whose readable copies start at 5
// (it was restored from a KV snapshot there): the records after the damage
// are on this replica alone, so it keeps its log instead of cutting it
// back, stops counting itself damaged (it fetches on from its end), and a
// read of the damaged batch answers CORRUPT from then on. Found by the tier
// simulation; before, the cut lost every record after the damage.
func TestDamageBelowTheLeadersCopiesIsKept(t *testing.T) {
	next := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 2, LeaderEpoch: 4,
		BucketEpoch: 5, Replicas: []uint32{1, 2}, Isr: []uint32{2}}
	meta := damageMeta{reports: make(chan *pb.ReportDamagedReplica, 10), answer: next}
	_, r := managedReplicaWith(t, t.TempDir(), meta, &heldFromLeader{heldFrom: 5})
	damageLeader(t, r, []uint32{1, 2})

	if _, err := r.ReadBelow(0, 10, 1<<20); err == nil {
		t.Fatal("the damaged batch read back")
	}
	<-meta.reports
	waitUndamaged(t, r, "the replica neither cut nor kept its damaged log")
	if r.log.EndOffset() != 10 {
		t.Fatalf("log end %d: the replica cut records no other copy holds", r.log.EndOffset())
	}
	r.mu.Lock()
	kept := r.damage.kept
	r.mu.Unlock()
	if kept != 0 {
		t.Fatalf("kept damage at %d, want 0", kept)
	}
}
