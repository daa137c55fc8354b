package replica

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
)

// TestApplyChunkedSplitsWhatBadgerRefuses applies more small rows than
// one transaction of a store with the smallest memtable can take.
func TestApplyChunkedSplitsWhatBadgerRefuses(t *testing.T) {
	st, err := kvstore.Open(kvstore.Config{Dir: t.TempDir(), MemTableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
	if err != nil || rows[0] == nil || rows[1] == nil {
		t.Fatalf("rows after applyChunked: %v %v", rows, err)
	}
}

// fakeGC rewrites one of its files per file asked for, until none is left.
type fakeGC struct {
	files int
	err   error
	calls int
}

func (f *fakeGC) CollectGarbage(maxFiles int) (int, error) {
	f.calls++
	if f.err != nil {
		return 0, f.err
	}
	n := min(f.files, maxFiles)
	f.files -= n
	return n, nil
}

// TestKVGarbageRoundsPace checks the collector's rounds: one file per store
// per round, a rest after each rewrite, rounds repeated until no store has
// garbage, and a refused rest stops at once.
func TestKVGarbageRoundsPace(t *testing.T) {
	m := &Manager{log: slog.New(slog.DiscardHandler)}
	a, b, broken := &fakeGC{files: 3}, &fakeGC{files: 1}, &fakeGC{err: errors.New("disk on fire")}
	stores := map[string]gcTarget{"a": a, "b": b, "broken": broken}
	rests := 0
	rest := func(d time.Duration) bool {
		if d < 0 {
			t.Fatalf("rest of %v", d)
		}
		rests++
		return true
	}
	rounds := 0
	for m.collectKVGarbageRound(stores, rest) {
		rounds++
		if rounds > 10 {
			t.Fatal("rounds never end")
		}
	}
	if a.files != 0 || b.files != 0 {
		t.Fatalf("files left: a %d, b %d", a.files, b.files)
	}
	if rounds != 3 || rests != 4 {
		t.Fatalf("%d rounds with rewrites and %d rests, want 3 and 4 (one file per store per round)", rounds, rests)
	}
	if broken.calls != 4 {
		t.Fatalf("a failing store was tried %d times, want every round (4)", broken.calls)
	}

	a.files, b.files = 5, 5
	if m.collectKVGarbageRound(stores, func(time.Duration) bool { return false }) {
		t.Fatal("a round whose rest was refused (closing) asks for another")
	}
	if a.files+b.files != 9 {
		t.Fatalf("a refused rest let the round go on: %d files left of 10", a.files+b.files)
	}
}
