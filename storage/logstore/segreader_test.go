package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSegmentReaderEndsWhereRecoveryDoes: a segment damaged as a crash or
// a bad disk leaves it (cut short, zeroed, stray bytes, a flipped bit) is
// read by SegmentReader up to the same batch recovery keeps, and the
// reader says why the valid data ends there. A bad CRC can be read past.
func TestSegmentReaderEndsWhereRecoveryDoes(t *testing.T) {
	const batches = 5
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string, at int64) // at: the 4th batch's position
		keep   int                                       // batches before the end
		reason TailReason
	}{
		{"intact", func(*testing.T, string, int64) {}, batches, TailZero},
		{"cut short", func(t *testing.T, path string, at int64) { truncateFile(t, path, at+record0Half) }, 3, TailTorn},
		{"zeroed", func(t *testing.T, path string, at int64) { zeroFrom(t, path, at) }, 3, TailZero},
		{"stray bytes", func(t *testing.T, path string, at int64) {
			zeroFrom(t, path, at)
			flipBit(t, path, at+20)
		}, 3, TailTorn},
		{"bad CRC", func(t *testing.T, path string, at int64) { flipBit(t, path, at+60) }, 3, TailBadCRC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, Config{Dir: t.TempDir()})
			for i := range batches {
				mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 2, 100), 0)
			}
			dir := crashCopy(t, l)
			// Without a recovery point, recovery checks every batch.
			if err := os.Remove(filepath.Join(dir, recoveryPointFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			segs, err := ListSegments(dir)
			if err != nil || len(segs) != 1 {
				t.Fatalf("segments %v, %v", segs, err)
			}
			first := makeBatch(t, "0", 2, 100)
			tc.damage(t, segs[0].Path, 3*int64(len(first)))

			f, err := os.Open(segs[0].Path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := NewSegmentReader(f)
			read := 0
			var end *TailError
			for {
				b, pos, err := r.Next()
				if err == nil {
					if pos != int64(read)*int64(len(first)) || b.BaseOffset() != int64(read)*2 {
						t.Fatalf("batch %d at byte %d, offset %d", read, pos, b.BaseOffset())
					}
					read++
					continue
				}
				if !errors.As(err, &end) && !errors.Is(err, io.EOF) {
					t.Fatalf("after %d batches: %v", read, err)
				}
				break
			}
			if read != tc.keep {
				t.Fatalf("read %d batches before the end, want %d", read, tc.keep)
			}
			if end == nil || end.Reason != tc.reason || end.Position != int64(read)*int64(len(first)) {
				t.Fatalf("end %v, want %v at byte %d", end, tc.reason, read*len(first))
			}
			if tc.reason == TailBadCRC {
				// Its header held: the batch after it is read.
				if b, _, err := r.Next(); err != nil || b.BaseOffset() != 8 {
					t.Fatalf("past the bad CRC: %v, %v", b, err)
				}
			}

			recovered := openLog(t, Config{Dir: dir})
			got, err := readAll(t, recovered, 0)
			if err != nil || len(got) != tc.keep {
				t.Fatalf("recovery kept %d batches (%v), the reader %d", len(got), err, tc.keep)
			}
		})
	}
}

// record0Half is inside the first half of a test batch.
const record0Half = 40

// zeroFrom zeroes the file from at to its end.
func zeroFrom(t *testing.T, path string, at int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	writeAt(t, path, make([]byte, st.Size()-at), at)
}
