package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/floedb/floe/storage/record"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{Dir: "x"}, true},
		{"no dir", Config{}, false},
		{"tiny memtable", Config{Dir: "x", MemTableBytes: 1000}, false},
		{"huge memtable", Config{Dir: "x", MemTableBytes: 2 << 30}, false},
		{"negative block cache", Config{Dir: "x", BlockCacheBytes: -1}, false},
		{"negative index cache", Config{Dir: "x", IndexCacheBytes: -1}, false},
		{"one memtable", Config{Dir: "x", NumMemtables: 1}, false},
		{"negative value threshold", Config{Dir: "x", ValueThresholdBytes: -1}, false},
		{"value threshold over 1 MiB", Config{Dir: "x", ValueThresholdBytes: 1<<20 + 1}, false},
		{"value threshold over a write", Config{Dir: "x", MemTableBytes: 1 << 20, ValueThresholdBytes: 200 << 10}, false},
		{"value threshold within a write", Config{Dir: "x", MemTableBytes: 1 << 20, ValueThresholdBytes: 100 << 10}, true},
		{"negative discard ratio", Config{Dir: "x", GCDiscardRatio: -0.5}, false},
		{"discard ratio of one", Config{Dir: "x", GCDiscardRatio: 1}, false},
		{"explicit", Config{Dir: "x", MemTableBytes: 4 << 20, NumMemtables: 3, ValueThresholdBytes: 4 << 10, GCDiscardRatio: 0.7,
			SyncWrites: true, Logger: slog.Default()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not match ErrInvalidConfig", err)
			}
		})
	}
}

func TestApplyRoundTrip(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	if off, err := s.AppliedOffset(); err != nil || off != 0 {
		t.Fatalf("new store AppliedOffset = %d, %v; want 0", off, err)
	}
	batch := []Change{
		{Key: []byte("a1"), Row: []byte("row a1"), Kind: record.Insert},
		{Key: []byte("a2"), Row: []byte("row a2"), Kind: record.Insert},
		{Key: []byte("b1"), Row: []byte("row b1"), Kind: record.Insert},
		{Key: []byte("c1"), Row: []byte("row c1"), Kind: record.Insert},
	}
	if err := s.Apply(batch, 4); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	batch2 := []Change{
		{Key: []byte("a2"), Row: []byte("row a2"), Kind: record.UpdateBefore},
		{Key: []byte("a2"), Row: []byte("row a2 v2"), Kind: record.UpdateAfter},
		{Key: []byte("c1"), Row: []byte("row c1"), Kind: record.Delete},
		{Key: []byte("d1"), Row: []byte("row d1"), Kind: record.Insert},
		{Key: []byte("d1"), Row: []byte("row d1"), Kind: record.Delete},
		{Key: []byte("e1"), Row: []byte("row e1"), Kind: record.Insert},
	}
	if err := s.Apply(batch2, 10); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := map[string]string{"a1": "row a1", "a2": "row a2 v2", "b1": "row b1", "e1": "row e1"}

	for _, key := range []string{"a1", "a2", "b1", "c1", "d1", "e1", "zz"} {
		t.Run("Get "+key, func(t *testing.T) {
			row, ok, err := s.Get([]byte(key))
			if err != nil {
				t.Fatal(err)
			}
			w, wok := want[key]
			if ok != wok || string(row.Data) != w {
				t.Fatalf("Get(%q) = %q, %v; want %q, %v", key, row.Data, ok, w, wok)
			}
		})
	}

	rows, err := s.GetBatch([][]byte{[]byte("b1"), []byte("c1"), []byte("a2"), []byte("nope")})
	if err != nil {
		t.Fatalf("GetBatch: %v", err)
	}
	wantRows := []string{"row b1", "", "row a2 v2", ""}
	for i, r := range rows {
		if string(r.Data) != wantRows[i] || (wantRows[i] == "") != (r.Data == nil) {
			t.Errorf("GetBatch[%d] = %q, want %q", i, r.Data, wantRows[i])
		}
	}

	scans := []struct {
		prefix string
		want   []string
	}{
		{"a", []string{"a1=row a1", "a2=row a2 v2"}},
		{"", []string{"a1=row a1", "a2=row a2 v2", "b1=row b1", "e1=row e1"}},
		{"c", nil},
		{"b1", []string{"b1=row b1"}},
	}
	for _, sc := range scans {
		t.Run("PrefixScan "+sc.prefix, func(t *testing.T) {
			var got []string
			err := s.PrefixScan([]byte(sc.prefix), func(key []byte, r Row) error {
				row := r.Data
				got = append(got, string(key)+"="+string(row))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(sc.want) {
				t.Fatalf("PrefixScan(%q) = %v, want %v", sc.prefix, got, sc.want)
			}
		})
	}

	stop := errors.New("stop")
	n := 0
	err = s.PrefixScan(nil, func([]byte, Row) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("PrefixScan with stopping fn = %v after %d calls", err, n)
	}
	// Metadata never shows up as rows.
	err = s.PrefixScan(nil, func(key []byte, _ Row) error {
		if bytes.HasPrefix(key, []byte("applied")) {
			t.Errorf("metadata key %q scanned as a row", key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAppliedOffsetPersists(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Open(testStoreID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]Change{{Key: []byte("k"), Row: []byte("v1"), Kind: record.Insert}}, 7); err != nil {
		t.Fatal(err)
	}
	// A batch that changes no key still advances the offset.
	if err := s.Apply(nil, 9); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.AppliedOffset(); !errors.Is(err, ErrClosed) {
		t.Fatalf("AppliedOffset after Close = %v, want ErrClosed", err)
	}
	if _, _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v, want ErrClosed", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = newTestStore(t, dir)
	off, err := s.AppliedOffset()
	if err != nil || off != 9 {
		t.Fatalf("AppliedOffset after reopen = %d, %v; want 9", off, err)
	}
	row, ok, err := s.Get([]byte("k"))
	if err != nil || !ok || string(row.Data) != "v1" {
		t.Fatalf("Get after reopen = %q, %v, %v", row.Data, ok, err)
	}
}

func TestApplyRefusesOldOffset(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	put := func(v string) []Change { return []Change{{Key: []byte("k"), Row: []byte(v), Kind: record.Insert}} }
	if err := s.Apply(put("v1"), 5); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		entries []Change
		next    int64
		wantErr error
	}{
		{"equal offset", put("v2"), 5, ErrStaleOffset},
		{"older offset", put("v2"), 3, ErrStaleOffset},
		{"empty batch at old offset is a no-op", nil, 4, nil},
		{"empty key", []Change{{Row: []byte("x"), Kind: record.Insert}}, 6, ErrInvalidChange},
		{"insert without row", []Change{{Key: []byte("k"), Kind: record.UpdateAfter}}, 6, ErrInvalidChange},
		{"append-only record", []Change{{Key: []byte("k"), Row: []byte("x"), Kind: record.AppendOnly}}, 6, ErrInvalidChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Apply(tt.entries, tt.next)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Apply = %v, want %v", err, tt.wantErr)
			}
			off, _ := s.AppliedOffset()
			row, _, _ := s.Get([]byte("k"))
			if off != 5 || string(row.Data) != "v1" {
				t.Fatalf("after refused Apply: offset %d row %q; want 5, v1", off, row.Data)
			}
		})
	}
}

func TestApplyTooLargeIsAtomic(t *testing.T) {
	// An 8 MiB memtable: a transaction may hold about 1.2 MB.
	s := openTestStore(t, Config{Dir: t.TempDir(), MemTableBytes: 8 << 20})
	big := bytes.Repeat([]byte("x"), 200) // below the value threshold: counted in full
	var entries []Change
	for i := range 10240 {
		entries = append(entries, Change{Key: fmt.Appendf(nil, "k%05d", i), Row: big, Kind: record.Insert})
	}
	err := s.Apply(entries, 100)
	if !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("Apply of a 2 MiB batch = %v, want ErrBatchTooLarge", err)
	}
	off, _ := s.AppliedOffset()
	_, ok, _ := s.Get([]byte("k00000"))
	if off != 0 || ok {
		t.Fatalf("after refused batch: offset %d, first key stored %v", off, ok)
	}
}

func TestCollectGarbage(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	row := bytes.Repeat([]byte("v"), 1024) // in the value log
	for round := range 20 {
		var entries []Change
		for i := range 200 {
			entries = append(entries, Change{Key: fmt.Appendf(nil, "k%03d", i), Row: row, Kind: record.UpdateAfter})
		}
		if err := s.Apply(entries, int64(round+1)*200); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.CollectGarbage(2, 0); err != nil {
		t.Fatalf("CollectGarbage = %v", err)
	}
	if got, ok, err := s.Get([]byte("k007")); err != nil || !ok || !bytes.Equal(got.Data, row) {
		t.Fatalf("after GC: %v %v", ok, err)
	}
	s.db.Close()
	if _, err := s.db.CollectGarbage(1, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("CollectGarbage after Close = %v, want ErrClosed", err)
	}
}
