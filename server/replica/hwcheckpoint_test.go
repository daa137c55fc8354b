package replica

import (
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestHWCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c, err := loadHWCheckpoint(dir)
	if err != nil || len(c.saved) != 0 {
		t.Fatalf("a missing checkpoint: %d entries, %v", len(c.saved), err)
	}
	hws := map[BucketID]int64{{TableID: 1, Bucket: 0}: 10, {TableID: 1, Bucket: 3}: 0, {TableID: 1 << 40, Bucket: 1<<31 - 1}: 1 << 50}
	if err := c.save(maps.Clone(hws)); err != nil {
		t.Fatal(err)
	}
	c2, err := loadHWCheckpoint(dir)
	if err != nil || !maps.Equal(c2.saved, hws) {
		t.Fatalf("reloaded %v, %v; want %v", c2.saved, err, hws)
	}
	// A deleted replica leaves the file with the next save.
	delete(hws, BucketID{TableID: 1, Bucket: 3})
	if err := c2.save(maps.Clone(hws)); err != nil {
		t.Fatal(err)
	}
	if c3, _ := loadHWCheckpoint(dir); !maps.Equal(c3.saved, hws) {
		t.Fatalf("after a replica went: %v, want %v", c3.saved, hws)
	}
}

func TestHWCheckpointDamagedOrLegacy(t *testing.T) {
	dir := t.TempDir()
	c, _ := loadHWCheckpoint(dir)
	if err := c.save(map[BucketID]int64{{TableID: 1}: 42}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, hwCheckpointFile)
	buf, _ := os.ReadFile(path)
	buf[len(buf)-6] ^= 1 // a flipped bit in the last high watermark
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	damaged, err := loadHWCheckpoint(dir)
	if err == nil || len(damaged.saved) != 0 {
		t.Fatalf("a damaged checkpoint loaded %d entries, error %v; want none and an error", len(damaged.saved), err)
	}
	// A replica the node file does not name falls back to the file of
	// earlier builds in its folder, then to 0.
	repDir := t.TempDir()
	if got := damaged.get(BucketID{TableID: 1}, repDir); got != 0 {
		t.Fatalf("no checkpoint anywhere: %d, want 0", got)
	}
	if err := os.WriteFile(filepath.Join(repDir, legacyHWFile), binary.BigEndian.AppendUint64(nil, 17), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := damaged.get(BucketID{TableID: 1}, repDir); got != 17 {
		t.Fatalf("legacy checkpoint: %d, want 17", got)
	}
}

// TestHWCheckpointAcrossRestart: a replica reopened by a new manager on the
// same folder starts from the high watermark its node checkpointed.
func TestHWCheckpointAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	m := newTestManager(t, dir)
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	lead(r, 1)
	produceLeader(t, r, writerBatchN(t, 100, 0, 3, "a"))
	produceLeader(t, r, writerBatchN(t, 100, 1, 2, "b"))
	_, _, _, hw := r.state()
	if hw != 5 {
		t.Fatalf("high watermark %d, want 5", hw)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newTestManager(t, dir)
	r2 := openTestReplica(t, m2)
	if _, _, _, hw := r2.state(); hw != 5 {
		t.Fatalf("reopened replica's high watermark %d, want the checkpointed 5", hw)
	}
}
