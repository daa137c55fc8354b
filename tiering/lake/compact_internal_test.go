package lake

import "testing"

// TestSmallRun: a run to merge is at least eight consecutive small files
// (under 16 MiB and 64 Ki rows each) within the merge's bounds; a file of
// many rows that compress well is not small, so a merged file is not
// merged again and again as files come after it.
func TestSmallRun(t *testing.T) {
	small := func(n int) []FileSpan {
		out := make([]FileSpan, n)
		for i := range out {
			out[i] = FileSpan{From: int64(i * 100), Next: int64(i*100 + 100), Rows: 100, Size: 4 << 10}
		}
		return out
	}
	many := FileSpan{Rows: compactSmallRows, Size: 1 << 20} // a round's rows, well compressed
	tests := []struct {
		name  string
		spans []FileSpan
		first int // index of the run's first file; -1: none
		n     int
	}{
		{"seven small", small(7), -1, 0},
		{"eight small", small(8), 0, 8},
		{"many rows first", append([]FileSpan{many}, small(9)...), 1, 9},
		{"many rows inside", append(append(small(5), many), small(8)...), 6, 8},
		{"a big file", append(small(4), append([]FileSpan{{Rows: 10, Size: compactSmallBytes}}, small(4)...)...), -1, 0},
	}
	for _, tc := range tests {
		run := smallRun(tc.spans, compactSmallBytes, compactMaxBytes, compactMinFiles)
		switch {
		case tc.first < 0 && run != nil:
			t.Errorf("%s: merged %d files, want none", tc.name, len(run))
		case tc.first >= 0 && (len(run) != tc.n || &run[0] != &tc.spans[tc.first]):
			t.Errorf("%s: run of %d files, want %d from file %d", tc.name, len(run), tc.n, tc.first)
		}
	}
	// The rows a merge writes are bounded: 20 files of 60 Ki rows make a
	// run of the 17 that fit in 1 Mi.
	var big []FileSpan
	for range 20 {
		big = append(big, FileSpan{Rows: 60 << 10, Size: 1 << 20})
	}
	if run := smallRun(big, compactSmallBytes, compactMaxBytes, compactMinFiles); len(run) != 17 {
		t.Errorf("a run of %d files of 60 Ki rows, want the 17 within %d rows", len(run), compactMaxRows)
	}
}
