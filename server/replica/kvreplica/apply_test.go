package kvreplica

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
)

// TestApplyChunkedSplitsWhatBadgerRefuses applies more small rows than
// one transaction of a store with the smallest memtable can take.
func TestApplyChunkedSplitsWhatBadgerRefuses(t *testing.T) {
	db, err := kvstore.OpenDB(kvstore.Config{Dir: t.TempDir(), MemTableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Open(kvstore.StoreID{Table: 1})
	if err != nil {
		t.Fatal(err)
	}
	row := bytes.Repeat([]byte("r"), 200) // kept in the LSM: counted in full
	var changes []kvstore.Change
	for i := range 5000 {
		changes = append(changes, kvstore.Change{Key: fmt.Appendf(nil, "k%05d", i), Row: row, Kind: record.Insert, Offset: int64(10 + i)})
	}
	if err := st.Apply(changes, 5010); !errors.Is(err, kvstore.ErrBatchTooLarge) {
		t.Fatalf("Apply of the whole batch = %v; the test needs one Badger refuses", err)
	}
	if err := applyChunked(st, changes, 6000); err != nil {
		t.Fatal(err)
	}
	if off, _ := st.AppliedOffset(); off != 6000 {
		t.Fatalf("applied offset %d, want 6000", off)
	}
	rows, err := st.GetBatch([][]byte{[]byte("k00000"), []byte("k04999")})
	if err != nil || rows[0].Data == nil || rows[1].Data == nil {
		t.Fatalf("rows after applyChunked: %v %v", rows, err)
	}
}
