package replica

import (
	"strings"
	"testing"

	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport/pb"
)

// TestFencedRemoteCopiesAreNotUsed: while an unclean election's fence on
// the bucket's remote log is up (remote storage 6), a replica deletes no
// local segment on the remote log's strength, serves no consumer read from
// it (UNAVAILABLE, retriable: the cut comes with the leader's next round)
// and catches up or restores from none of it. Once the cut is committed
// (the fence lifted) the remote log counts again.
func TestFencedRemoteCopiesAreNotUsed(t *testing.T) {
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reader, err := tiering.NewReader(tiering.ReaderConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, t.TempDir(), func(c *Config) { c.Remote = reader })
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.tables[testBucket.TableID] = r.info.Load()
	m.mu.Unlock()
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 3, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 19)
	for i := range 4 {
		produceLeader(t, r, writerBatchN(t, 100, int32(i), 5, "x"))
	}
	fenced := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 4,
		BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: []uint32{1}, RemoteFenceEpoch: 4,
		RemoteLog: &pb.RemoteLog{ManifestKey: "m/old", StartOffset: 0, EndOffset: 10, RunStartOffset: 0, Version: 2, Segments: 1, Bytes: 100}}
	r.assign(fenced, 20)
	if b := r.log.Bounds(); b.RemoteEnd != 0 {
		t.Fatalf("retention bounds while fenced: %+v; want nothing counted remote", b)
	}
	if err := r.log.Reset(25); err != nil { // the local log starts past the remote end
		t.Fatal(err)
	}
	resp, err := m.Fetch(t.Context(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if fb := resp.Buckets[0]; fb.ErrorCode != pb.ErrorCode_ERROR_CODE_UNAVAILABLE || !strings.Contains(fb.Error, "await their cut") {
		t.Fatalf("consumer read below the local start while fenced: %v %q; want UNAVAILABLE naming the cut", fb.ErrorCode, fb.Error)
	}
	if err := r.catchUpFromRemote(t.Context(), 2, 4, &pb.FetchedBucket{LogStartOffset: 30}); err == nil || !strings.Contains(err.Error(), "await their cut") {
		t.Fatalf("catch-up while fenced: %v; want a refusal naming the cut", err)
	}

	lifted := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 4,
		BucketEpoch: 4, Replicas: []uint32{1, 2}, Isr: []uint32{1},
		RemoteLog: &pb.RemoteLog{ManifestKey: "m/cut", StartOffset: 0, EndOffset: 10, RunStartOffset: 0, Version: 3, Segments: 1, Bytes: 100}}
	r.assign(lifted, 21)
	if b := r.log.Bounds(); b.RemoteEnd != 10 {
		t.Fatalf("retention bounds after the cut: %+v; want the remote end 10", b)
	}
}

// TestLeaderLogDivergence: the leader's log, of epoch 3 up to 10 and its
// own epoch 5 after, parts from a manifest holding epoch 3 up to 20 at 10;
// from one that ends at 10 it does not part; below the log's start it is
// taken as agreeing.
func TestLeaderLogDivergence(t *testing.T) {
	_, r := managedReplica(t, noMeta{})
	for i, epoch := range []int32{3, 3, 5, 5} {
		b := writerBatchN(t, 100, int32(i), 5, "x")
		if _, err := r.log.Append(b, epoch); err != nil {
			t.Fatal(err)
		}
	}
	seg := func(base, next int64, epochs ...tiering.EpochStart) tiering.RemoteSegment {
		return tiering.RemoteSegment{BaseOffset: base, NextOffset: next, Epochs: epochs}
	}
	cases := []struct {
		name string
		m    *tiering.Manifest
		want int64
		ok   bool
	}{
		{"the old leader's epoch 3 went on", &tiering.Manifest{Segments: []tiering.RemoteSegment{
			seg(0, 8, tiering.EpochStart{Epoch: 3}), seg(8, 20, tiering.EpochStart{Epoch: 3, StartOffset: 8})}}, 10, true},
		{"the copy ends where the histories part", &tiering.Manifest{Segments: []tiering.RemoteSegment{
			seg(0, 10, tiering.EpochStart{Epoch: 3})}}, 0, false},
		{"an epoch the leader never had", &tiering.Manifest{Segments: []tiering.RemoteSegment{
			seg(0, 12, tiering.EpochStart{Epoch: 3}, tiering.EpochStart{Epoch: 4, StartOffset: 6})}}, 6, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := divergence(r.log, c.m)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("Divergence = %d, %v; want %d, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
