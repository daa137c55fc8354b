package replica

import (
	"os"
	"path/filepath"
	"testing"
)

// crashAndReopen closes r's log without the writer-state snapshot a clean
// close takes (what a crash leaves) and opens the replica again.
func crashAndReopen(t *testing.T, m *Manager, r *Replica) *Replica {
	t.Helper()
	if err := r.log.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := openTestReplica(t, m)
	t.Cleanup(func() { r2.close(false) })
	return r2
}

// retryIsNew asserts that writer's batch seq is not answered as a
// duplicate (the log no longer holds it).
func retryIsNew(t *testing.T, r *Replica, writer int64, seq int32) {
	t.Helper()
	dup, err := r.writers.table.check(writer, seq, false)
	if err != nil {
		t.Fatalf("writer %d seq %d: %v", writer, seq, err)
	}
	if dup != nil {
		t.Fatalf("writer %d seq %d answered as a duplicate at offsets %d-%d, which hold another writer's batch now",
			writer, seq, dup.Base, dup.Last)
	}
}

// snapshotThenTruncate writes writer 100's batches 0 (offsets 0-1) and 1
// (2-3) on a leader, snapshots the writer state at 4, and truncates to 2
// with truncate (a divergence: batch 1 was never committed).
func snapshotThenTruncate(t *testing.T, truncate func(*Replica) error) (*Manager, *Replica) {
	t.Helper()
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	lead(r, 1)
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	produceLeader(t, r, writerBatchN(t, 100, 1, 2, "b"))
	r.saveWriters()
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	if err := truncate(r); err != nil {
		t.Fatal(err)
	}
	if err := r.rebuildWriters(); err != nil {
		t.Fatal(err)
	}
	return m, r
}

// TestWriterSnapshotDroppedOnTruncation (bug 7): a snapshot taken before a
// truncation must not be trusted after a crash once other batches fill the
// truncated offsets; a retry of a truncated batch is new, not a duplicate
// at offsets now holding other data.
func TestWriterSnapshotDroppedOnTruncation(t *testing.T) {
	m, r := snapshotThenTruncate(t, func(r *Replica) error { return r.truncate(2) })
	produceLeader(t, r, writerBatchN(t, 200, 0, 4, "c")) // another writer: 2-5

	r2 := crashAndReopen(t, m, r)
	retryIsNew(t, r2, 100, 1)
	if dup, err := r2.writers.table.check(200, 0, false); err != nil || dup == nil || dup.Base != 2 {
		t.Fatalf("the surviving batch is not remembered: %+v %v", dup, err)
	}
}

// TestWriterSnapshotAnchoredToItsBatch (bug 7): a crash between a
// truncation and the snapshot's removal leaves a snapshot whose offset a
// different batch now ends at; the snapshot names its batch (epoch and
// CRC), so it is not used.
func TestWriterSnapshotAnchoredToItsBatch(t *testing.T) {
	// The truncation without the drop.
	m, r := snapshotThenTruncate(t, func(r *Replica) error { return r.log.Truncate(2) })
	produceLeader(t, r, writerBatchN(t, 200, 0, 2, "c")) // another batch ending at 4

	r2 := crashAndReopen(t, m, r)
	retryIsNew(t, r2, 100, 1)
}

// snapshotAfterOne writes writer 100's batch 0 (offsets 0-1) on a leader
// and snapshots the writer state at 2.
func snapshotAfterOne(t *testing.T) (*Manager, *Replica) {
	t.Helper()
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	lead(r, 1)
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	r.saveWriters()
	return m, r
}

// TestWriterSnapshotUsedWhenItMatches: the snapshot of an untouched log is
// used and replayed forward; retries after it are still recognized.
func TestWriterSnapshotUsedWhenItMatches(t *testing.T) {
	m, r := snapshotAfterOne(t)
	produceLeader(t, r, writerBatchN(t, 100, 1, 2, "b"))
	r2 := crashAndReopen(t, m, r)
	for seq, base := range []int64{0, 2} {
		if dup, err := r2.writers.table.check(100, int32(seq), false); err != nil || dup == nil || dup.Base != base {
			t.Fatalf("seq %d after reopen: %+v %v", seq, dup, err)
		}
	}
	_, offset, anchor, err := loadWriters(r2.dir)
	if err != nil || offset != 2 || anchor.epoch != 1 {
		t.Fatalf("snapshot: offset %d anchor %+v err %v", offset, anchor, err)
	}
}

// TestIdleWriterSnapshotNotRewritten: the periodic snapshot of a replica
// whose log has not moved since the last one writes nothing (10,000 idle
// replicas would otherwise rewrite 10,000 files every round); after a
// write, or a truncation (which drops it), it is taken again.
func TestIdleWriterSnapshotNotRewritten(t *testing.T) {
	_, r := snapshotAfterOne(t)
	snap := filepath.Join(r.dir, writerSnapFile)
	exists := func() bool { _, err := os.Stat(snap); return err == nil }
	if !exists() {
		t.Fatal("no snapshot taken")
	}
	os.Remove(snap) // so a rewrite would show
	r.saveWriters()
	if exists() {
		t.Fatal("the snapshot of an idle replica was written again")
	}
	produceLeader(t, r, writerBatchN(t, 100, 1, 2, "b"))
	r.saveWriters()
	if !exists() {
		t.Fatal("no snapshot after a write")
	}
	r.produceMu.Lock()
	err := r.truncate(2)
	if err == nil {
		err = r.rebuildWriters()
	}
	r.produceMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	produceLeader(t, r, writerBatchN(t, 200, 0, 2, "c")) // ends at 4 again
	r.saveWriters()
	if _, offset, _, err := loadWriters(r.dir); err != nil || offset != 4 {
		t.Fatalf("snapshot after truncation and a write: offset %d: %v", offset, err)
	}
}

// TestEmptyLogWritesNoWriterSnapshot: a new replica's empty log has no
// writers to remember, so housekeeping writes no snapshot for it until it
// holds a batch.
func TestEmptyLogWritesNoWriterSnapshot(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	r.saveWriters()
	if _, err := os.Stat(filepath.Join(r.dir, writerSnapFile)); err == nil {
		t.Fatal("an empty log's replica wrote a writer-state snapshot")
	}
	lead(r, 1)
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	r.saveWriters()
	if _, offset, _, err := loadWriters(r.dir); err != nil || offset != 2 {
		t.Fatalf("snapshot after the first batch: offset %d, %v; want 2", offset, err)
	}
}
