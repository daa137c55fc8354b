package kvreplica

import (
	"slices"
	"testing"

	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
)

// TestOrphanStoresDroppedAtStart: stores whose replica the node no longer
// has (a crash between deleting a replica and dropping its store) are
// dropped when the KV side starts; the others keep their rows.
func TestOrphanStoresDroppedAtStart(t *testing.T) {
	dir := t.TempDir()
	db, err := kvstore.OpenDB(kvstore.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ids := []kvstore.StoreID{{Table: 1, Bucket: 0}, {Table: 1, Bucket: 1}, {Table: 2, Bucket: 0}}
	for _, id := range ids {
		s, err := db.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply([]kvstore.Change{{Key: []byte("k"), Row: []byte("v"), Kind: record.Insert}}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	kept := func(id kvstore.StoreID) bool { return id.Table == 1 }
	tables, err := New(Config{DB: kvstore.Config{Dir: dir}, ReplicaKept: kept})
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	left, err := tables.db.StoreIDs()
	if err != nil {
		t.Fatal(err)
	}
	if want := ids[:2]; !slices.Equal(left, want) {
		t.Fatalf("stores after start: %v, want %v", left, want)
	}
	s, err := tables.db.Open(ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if row, ok, err := s.Get([]byte("k")); err != nil || !ok || string(row.Data) != "v" {
		t.Fatalf("a kept store's row: %q %v %v", row.Data, ok, err)
	}
}
