package tiering

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// bigRows is a store of n rows over enough parts that a few changed rows
// leave most parts as they were.
func bigRows(n int, offset int64) *memRows {
	src := &memRows{rows: map[string]string{}, offset: offset}
	for i := range n {
		src.rows[fmt.Sprintf("key-%07d", i)] = strings.Repeat(fmt.Sprint(i%10), 40)
	}
	return src
}

// listKV lists the bucket's KV snapshot objects.
func listKV(t *testing.T, cfg KVSnapshotConfig) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	if err := cfg.Store.List(t.Context(), kvPrefix(cfg.Root, cfg.TableID, cfg.Bucket), func(o ObjectInfo) error {
		got[o.Key] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKVCollectDeposedLeaderKeepsNewerSnapshot is the deposed leader's
// collection: leader A (epoch 5) commits S1; B (epoch 6) takes S2 on S1,
// reusing most of its parts, and commits it, dropping S1; A's collection
// runs late, with the list A's commit returned. S2 must still restore
// whole: its manifest and the parts it uploaded name epoch 6, which A's
// collection leaves alone, and the parts it reused are S1's, which A keeps.
// The same holds for a snapshot B stored and has not committed yet.
func TestKVCollectDeposedLeaderKeepsNewerSnapshot(t *testing.T) {
	cfg := snapConfig(t)
	ctx := t.Context()
	src := bigRows(30_000, 1000)
	s1, err := TakeKVSnapshot(ctx, cfg, 5, nil, src.source())
	if err != nil {
		t.Fatal(err)
	}
	src.rows["key-0000100"] = "changed by B"
	src.offset = 2000
	s2, err := TakeKVSnapshot(ctx, cfg, 6, []string{s1.ManifestKey}, src.source())
	if err != nil {
		t.Fatal(err)
	}
	if s2.ReusedParts == 0 || s2.ReusedParts == len(s2.Manifest.Parts) {
		t.Fatalf("S2 reused %d of %d parts; the test wants some reused, some new", s2.ReusedParts, len(s2.Manifest.Parts))
	}
	src.rows["key-0020000"] = "in flight"
	src.offset = 3000
	s3, err := TakeKVSnapshot(ctx, cfg, 6, []string{s2.ManifestKey}, src.source())
	if err != nil {
		t.Fatal(err)
	}

	if _, err := CollectKVSnapshots(ctx, cfg, 5, []string{s1.ManifestKey}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []KVSnapshotResult{s2, s3} {
		got := sinkRows{}
		if _, err := RestoreKVSnapshot(ctx, cfg.Store, s.ManifestKey, got); err != nil || len(got) != len(src.rows) {
			t.Fatalf("epoch 6 snapshot at %d after epoch 5's collection: %d rows, %v", s.Manifest.Offset, len(got), err)
		}
	}
	got := sinkRows{}
	if _, err := RestoreKVSnapshot(ctx, cfg.Store, s3.ManifestKey, got); err != nil || !maps.Equal(map[string]string(got), src.rows) {
		t.Fatalf("the newest snapshot does not restore its rows: %v", err)
	}
}

// TestKVCollectGarbage: the leader's collection deletes what no retained
// snapshot references, of its epoch and earlier ones (dropped snapshots,
// one of its own never committed, parts stored before part keys named an
// epoch), and leaves a later epoch's objects and keys in no known shape.
func TestKVCollectGarbage(t *testing.T) {
	cfg := snapConfig(t)
	ctx := t.Context()
	src := bigRows(10_000, 1000)
	old, err := TakeKVSnapshot(ctx, cfg, 5, nil, src.source())
	if err != nil {
		t.Fatal(err)
	}
	src.rows["key-0000001"] = "new"
	src.offset = 2000
	kept, err := TakeKVSnapshot(ctx, cfg, 6, []string{old.ManifestKey}, src.source())
	if err != nil {
		t.Fatal(err)
	}
	src.rows["key-0000002"] = "never committed"
	src.offset = 2500
	lost, err := TakeKVSnapshot(ctx, cfg, 6, []string{kept.ManifestKey}, src.source())
	if err != nil {
		t.Fatal(err)
	}
	src.rows["key-0000003"] = "a later leader's"
	src.offset = 3000
	later, err := TakeKVSnapshot(ctx, cfg, 7, []string{kept.ManifestKey}, src.source())
	if err != nil {
		t.Fatal(err)
	}
	prefix := kvPrefix(cfg.Root, cfg.TableID, cfg.Bucket)
	legacy := prefix + "parts/" + strings.Repeat("ab", 32) + ".part"
	stray := prefix + "notes/readme.txt"
	for _, key := range []string{legacy, stray} {
		if err := cfg.Store.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}

	before := listKV(t, cfg)
	n, err := CollectKVSnapshots(ctx, cfg, 6, []string{kept.ManifestKey})
	if err != nil {
		t.Fatal(err)
	}
	after := listKV(t, cfg)
	if len(before)-len(after) != n {
		t.Fatalf("collection says %d deleted, the store lost %d", n, len(before)-len(after))
	}
	want := map[string]bool{kept.ManifestKey: true, later.ManifestKey: true, stray: true}
	for _, m := range []KVSnapshotResult{kept, later} {
		for _, p := range m.Manifest.Parts {
			want[p.Key] = true
		}
	}
	if !maps.Equal(after, want) {
		t.Fatalf("after collection the store holds:\n%v\nwant:\n%v", keysOf(after), keysOf(want))
	}
	for _, key := range []string{old.ManifestKey, lost.ManifestKey, legacy} {
		if after[key] {
			t.Errorf("%s is still stored", key)
		}
	}
}

func keysOf(m map[string]bool) string {
	var b strings.Builder
	for k := range m {
		b.WriteString("  " + k + "\n")
	}
	return b.String()
}

func TestKVKeyEpoch(t *testing.T) {
	hash := strings.Repeat("0f", 32)
	tests := []struct {
		rest  string
		epoch int32
		ok    bool
	}{
		{"snapshots/00000000000000001000-5-a1b2c3.json", 5, true},
		{"snapshots/00000000000000001000-0-a1b2c3.json", 0, true},
		{"parts/6/" + hash + ".part", 6, true},
		{"parts/" + hash + ".part", 0, true},
		{"parts/x/" + hash + ".part", 0, false},
		{"parts/-1/" + hash + ".part", 0, false},
		{"parts/6/sub/" + hash + ".part", 0, false},
		{"parts/6/" + hash + ".tmp", 0, false},
		{"snapshots/00000000000000001000-5.json", 0, false},
		{"snapshots/00000000000000001000-99999999999-a.json", 0, false},
		{"snapshots/00000000000000001000-5-a1b2c3.txt", 0, false},
		{"other/x", 0, false},
	}
	for _, tc := range tests {
		if epoch, ok := kvKeyEpoch(tc.rest); epoch != tc.epoch || ok != tc.ok {
			t.Errorf("kvKeyEpoch(%q) = %d, %v; want %d, %v", tc.rest, epoch, ok, tc.epoch, tc.ok)
		}
	}
}
