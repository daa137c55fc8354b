package client

import (
	"testing"

	"github.com/floedb/floe/storage/record"
)

// fetchedBatches lays out batches of rows as a fetch answer would: the
// given base offsets, stamped times.
func fetchedBatches(t testing.TB, bases []int64, rows ...string) []byte {
	t.Helper()
	var out []byte
	for _, base := range bases {
		b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRows, AppendOnly: true}, 0)
		for _, r := range rows {
			if err := b.Append(record.AppendOnly, []byte(r)); err != nil {
				t.Fatal(err)
			}
		}
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		batch.SetBaseOffset(base)
		batch.SetCommitTimestamp(1700000000000 + base)
		out = append(out, batch...)
	}
	return out
}

func TestScanDecodeSkipsAndStops(t *testing.T) {
	tbl := &Table{c: &Client{}}
	s := &LogScanner{t: tbl}
	data := fetchedBatches(t, []int64{10, 13, 16}, "a", "b", "c")
	sub := &subscription{t: tbl, key: subKey{bucket: 2}, resolved: true, position: 11}
	// Offsets 10..18; from 11, below the high watermark 15.
	got, err := s.decode(t.Context(), nil, sub, data, 15)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Offset != 11 || got[3].Offset != 14 || sub.position != 15 {
		t.Fatalf("got %d records from %d, position %d", len(got), got[0].Offset, sub.position)
	}
	if string(got[0].Row) != "b" || got[0].Bucket != 2 || got[0].Timestamp.UnixMilli() != 1700000000010 {
		t.Fatalf("first record %+v", got[0])
	}
	// A batch cut off at the end is left for the next fetch.
	sub = &subscription{t: tbl, resolved: true, position: 10}
	got, err = s.decode(t.Context(), nil, sub, data[:len(data)-5], 100)
	if err != nil || len(got) != 6 || sub.position != 16 {
		t.Fatalf("cut tail: %d records, position %d, %v", len(got), sub.position, err)
	}
}

// TestNextAfterIsWhereDecodeEnds: where the scanner reads ahead from, by
// an answer's batch headers alone, is where decoding the answer leaves
// the position: past the whole batches, below the high watermark, never
// back; a cut-off tail is not counted.
func TestNextAfterIsWhereDecodeEnds(t *testing.T) {
	tbl := &Table{c: &Client{}}
	s := &LogScanner{t: tbl}
	data := fetchedBatches(t, []int64{10, 13, 16}, "a", "b", "c") // offsets 10..18
	for _, c := range []struct {
		data         []byte
		position, hw int64
		want         int64
	}{
		{data, 10, 100, 19},
		{data, 11, 15, 15},
		{data, 17, 100, 19},
		{data, 25, 100, 25},
		{data[:len(data)-5], 10, 100, 16},
		{nil, 4, 100, 4},
	} {
		if got := nextAfter(c.data, c.position, c.hw); got != c.want {
			t.Errorf("nextAfter(%d bytes, %d, %d) = %d, want %d", len(c.data), c.position, c.hw, got, c.want)
		}
		sub := &subscription{t: tbl, resolved: true, position: c.position}
		if _, err := s.decode(t.Context(), nil, sub, c.data, c.hw); err != nil || sub.position != c.want {
			t.Errorf("decoding %d bytes from %d (high watermark %d) ends at %d (%v), want %d", len(c.data), c.position, c.hw, sub.position, err, c.want)
		}
	}
}

// FuzzScanDecode feeds arbitrary fetch answers: decode never panics, and
// returns only records at or after the position and below the high
// watermark, in rising offset order, ending where the position moved.
func FuzzScanDecode(f *testing.F) {
	f.Add(fetchedBatches(f, []int64{0, 3}, "x", "yy", "zzz"), int64(1), int64(5))
	f.Add(fetchedBatches(f, []int64{7}, ""), int64(0), int64(100))
	f.Add([]byte{}, int64(0), int64(0))
	tbl := &Table{c: &Client{}}
	s := &LogScanner{t: tbl}
	f.Fuzz(func(t *testing.T, data []byte, position, hw int64) {
		if position < 0 || hw < 0 {
			return
		}
		sub := &subscription{t: tbl, resolved: true, position: position}
		got, _ := s.decode(t.Context(), nil, sub, data, hw)
		next := position
		for _, r := range got {
			if r.Offset < next || r.Offset >= hw {
				t.Fatalf("record at %d: position was %d, high watermark %d", r.Offset, next, hw)
			}
			next = r.Offset + 1
		}
		if sub.position < next || sub.position < position {
			t.Fatalf("position %d after records up to %d (started at %d)", sub.position, next, position)
		}
	})
}
