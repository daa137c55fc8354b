package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/floedb/floe/storage/record"
)

// writeLegacyStore writes a store in the layout of earlier builds: one
// Badger database, rows under 'r' | key, the applied offset under
// "mapplied_offset".
func writeLegacyStore(t *testing.T, dir string, rows map[string]string, applied int64) {
	t.Helper()
	old, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	wb := old.NewWriteBatch()
	for k, v := range rows {
		if err := wb.Set(append([]byte{'r'}, k...), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Set([]byte("mapplied_offset"), binary.BigEndian.AppendUint64(nil, uint64(applied))); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestImportLegacy(t *testing.T) {
	legacy := t.TempDir() + "/kv"
	want := map[string]string{}
	for i := range 3000 {
		want[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("row %d %0300d", i, i) // some in the value log
	}
	writeLegacyStore(t, legacy, want, 4321)

	db := openTestDB(t, Config{Dir: t.TempDir()})
	other, err := db.Open(StoreID{Table: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Apply([]Change{{Key: []byte("k00001"), Row: []byte("other"), Kind: record.Insert}}, 1); err != nil {
		t.Fatal(err)
	}
	s, err := db.Open(StoreID{Table: 1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.ImportLegacy(legacy)
	if err != nil || n != len(want) {
		t.Fatalf("ImportLegacy = %d, %v; want %d rows", n, err, len(want))
	}
	if _, err := os.Stat(legacy); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the earlier store's folder is still there: %v", err)
	}
	rows, off := storeRows(t, s)
	if off != 4321 || !maps.Equal(rows, want) {
		t.Fatalf("imported %d rows at offset %d, want %d at 4321", len(rows), off, len(want))
	}
	if rows, _ := storeRows(t, other); len(rows) != 1 || rows["k00001"] != "other" {
		t.Fatalf("the import touched another store: %v", rows)
	}
	// Only into an empty store: a crash mid-import is redone after a drop.
	writeLegacyStore(t, legacy, want, 4321)
	if _, err := s.ImportLegacy(legacy); err == nil {
		t.Fatal("ImportLegacy into a store that applied something succeeded")
	}
}
