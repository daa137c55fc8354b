package kvstore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/floedb/floe/storage/record"
)

// storeRows reads every row of s and its applied offset.
func storeRows(t fataler, s *Store) (map[string]string, int64) {
	t.Helper()
	rows := map[string]string{}
	off, err := s.Export(func(key []byte, r Row) error {
		row := r.Data
		rows[string(key)] = string(row)
		return nil
	})
	if err != nil {
		t.Fatalf("Export %s: %v", s.ID(), err)
	}
	return rows, off
}

// TestDBStoresAreIsolated writes the same keys to stores whose prefixes
// sit on varint boundaries, drops some, reopens the database, and checks
// that every store holds exactly its own rows and offset throughout.
func TestDBStoresAreIsolated(t *testing.T) {
	ids := []StoreID{{1, 0}, {1, 1}, {1, 127}, {1, 128}, {127, 1}, {128, 1}, {1 << 40, 1<<32 - 1}, {0, 0}}
	baseDir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		dir := filepath.Join(baseDir, fmt.Sprint(run))
		db, err := OpenDB(Config{Dir: dir})
		if err != nil {
			rt.Fatalf("OpenDB: %v", err)
		}
		defer func() { db.Close() }()
		want := map[StoreID]map[string]string{}
		offsets := map[StoreID]int64{}
		open := map[StoreID]*Store{}
		for _, id := range ids {
			s, err := db.Open(id)
			if err != nil {
				rt.Fatalf("Open %s: %v", id, err)
			}
			open[id], want[id] = s, map[string]string{}
		}
		keys := []string{"a", "b", "ab", "\x00", "\xff\xff"}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			id := rapid.SampledFrom(ids).Draw(rt, "store")
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 7: // apply a batch
				var changes []Change
				for range rapid.IntRange(0, 4).Draw(rt, "changes") {
					k := rapid.SampledFrom(keys).Draw(rt, "key")
					if rapid.Bool().Draw(rt, "delete") {
						changes = append(changes, Change{Key: []byte(k), Kind: record.Delete})
						delete(want[id], k)
						continue
					}
					v := fmt.Sprintf("%s@%s#%d", k, id, offsets[id])
					changes = append(changes, Change{Key: []byte(k), Row: []byte(v), Kind: record.Insert})
					want[id][k] = v
				}
				offsets[id] += int64(len(changes)) + 1
				if err := open[id].Apply(changes, offsets[id]); err != nil {
					rt.Fatalf("Apply %s: %v", id, err)
				}
			case op < 9: // drop the store, then open it again: empty
				if err := db.Drop(id); !errors.Is(err, ErrStoreOpen) {
					rt.Fatalf("Drop of open store %s = %v, want ErrStoreOpen", id, err)
				}
				open[id].Close()
				if err := db.Drop(id); err != nil {
					rt.Fatalf("Drop %s: %v", id, err)
				}
				if open[id], err = db.Open(id); err != nil {
					rt.Fatalf("Open %s after Drop: %v", id, err)
				}
				want[id], offsets[id] = map[string]string{}, 0
			default: // reopen the whole database
				if err := db.Close(); err != nil {
					rt.Fatalf("Close: %v", err)
				}
				if db, err = OpenDB(Config{Dir: dir}); err != nil {
					rt.Fatalf("OpenDB again: %v", err)
				}
				for _, id := range ids {
					if open[id], err = db.Open(id); err != nil {
						rt.Fatalf("Open %s after reopen: %v", id, err)
					}
				}
			}
			for _, id := range ids {
				rows, off := storeRows(rt, open[id])
				if !maps.Equal(rows, want[id]) || off != offsets[id] {
					rt.Fatalf("store %s holds %v at offset %d, want %v at %d", id, rows, off, want[id], offsets[id])
				}
				if got, _ := open[id].AppliedOffset(); got != offsets[id] {
					rt.Fatalf("store %s AppliedOffset %d, want %d", id, got, offsets[id])
				}
			}
		}
		var withData []StoreID
		for _, id := range ids {
			if offsets[id] > 0 {
				withData = append(withData, id)
			}
		}
		listed, err := db.StoreIDs()
		if err != nil {
			rt.Fatalf("StoreIDs: %v", err)
		}
		slices.SortFunc(listed, compareIDs)
		slices.SortFunc(withData, compareIDs)
		if !slices.Equal(listed, withData) {
			rt.Fatalf("StoreIDs = %v, want the stores with data %v", listed, withData)
		}
	})
}

func compareIDs(a, b StoreID) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Bucket, b.Bucket))
}

func TestDBOpenTwiceAndClose(t *testing.T) {
	db := openTestDB(t, Config{Dir: t.TempDir()})
	s, err := db.Open(StoreID{Table: 3, Bucket: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Open(StoreID{Table: 3, Bucket: 1}); !errors.Is(err, ErrStoreOpen) {
		t.Fatalf("second Open = %v, want ErrStoreOpen", err)
	}
	if err := s.Apply([]Change{{Key: []byte("k"), Row: []byte("v"), Kind: record.Insert}}, 1); err != nil {
		t.Fatal(err)
	}
	// Closing the DB closes the stores still open.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after the DB closed = %v, want ErrClosed", err)
	}
	if _, err := db.Open(StoreID{Table: 4}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close = %v, want ErrClosed", err)
	}
	if err := db.Drop(StoreID{Table: 4}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Drop after Close = %v, want ErrClosed", err)
	}
}

// TestDBDropManyLeavesTheRest drops many stores in one call and checks
// the rows of the others, and a prefix scan of one, are untouched.
func TestDBDropManyLeavesTheRest(t *testing.T) {
	db := openTestDB(t, Config{Dir: t.TempDir()})
	var drop []StoreID
	for b := range uint32(300) {
		id := StoreID{Table: 9, Bucket: b}
		s, err := db.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply([]Change{{Key: []byte("pk1"), Row: []byte(id.String()), Kind: record.Insert},
			{Key: []byte("pk2"), Row: []byte(id.String()), Kind: record.Insert}}, 5); err != nil {
			t.Fatal(err)
		}
		if b%3 != 0 {
			s.Close()
			drop = append(drop, id)
		}
	}
	if err := db.Drop(drop...); err != nil {
		t.Fatal(err)
	}
	for b := range uint32(300) {
		id := StoreID{Table: 9, Bucket: b}
		if b%3 != 0 {
			s, err := db.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			if rows, off := storeRows(t, s); len(rows) != 0 || off != 0 {
				t.Fatalf("dropped store %s holds %v at offset %d", id, rows, off)
			}
			continue
		}
		s := db.open[id]
		var got [][]byte
		if err := s.PrefixScan([]byte("pk"), func(key []byte, r Row) error {
			row := r.Data
			got = append(got, slices.Clone(row))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !bytes.Equal(got[0], []byte(id.String())) {
			t.Fatalf("kept store %s scans %q", id, got)
		}
	}
}

// TestDBDropWhileOthersApply: a drop of some stores makes the applies of
// the others wait, never fail: Badger refuses every write while a
// DropPrefix runs, and before writes and drops were serialized a dropped
// partition's store failed the applies of the partition being written.
func TestDBDropWhileOthersApply(t *testing.T) {
	db := openTestDB(t, Config{Dir: t.TempDir()})
	live, err := db.Open(StoreID{Table: 1})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	applied := make(chan error, 1)
	go func() {
		for next := int64(1); ; next++ {
			select {
			case <-stop:
				applied <- nil
				return
			default:
			}
			key := fmt.Appendf(nil, "k%d", next%64)
			if err := live.Apply([]Change{{Key: key, Row: key, Kind: record.Insert}}, next); err != nil {
				applied <- fmt.Errorf("apply at %d: %w", next, err)
				return
			}
		}
	}()
	for i := range uint32(50) {
		id := StoreID{Table: 2, Bucket: i}
		s, err := db.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply([]Change{{Key: []byte("k"), Row: []byte("v"), Kind: record.Insert}}, 1); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := db.Drop(id); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-applied; err != nil {
		t.Fatalf("an apply to another store during the drops: %v", err)
	}
}

// TestDBCloseGivesUpOnAFailingFlush: Badger retries a memtable flush that
// fails forever, and its Close waits for that flush. With the database's
// folder gone, Close must still return, with ErrCloseTimeout, so a node on
// a failed disk can stop.
func TestDBCloseGivesUpOnAFailingFlush(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(Config{Dir: dir, CloseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Open(StoreID{Table: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]Change{{Key: []byte("k"), Row: []byte("v"), Kind: record.Insert}}, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCloseTimeout) {
			t.Fatalf("Close = %v, want ErrCloseTimeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close still waiting on Badger's flush after a minute")
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil (already closed)", err)
	}
}
