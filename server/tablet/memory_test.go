package tablet

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultRowCacheIsAQuarterOfMemory(t *testing.T) {
	limit := memoryLimit()
	if limit <= 0 {
		t.Skip("memory size not readable here")
	}
	got := DefaultKVRowCacheBytes()
	if want := max(limit/4, minDefaultRowCache); got != want {
		t.Fatalf("default row cache %d bytes, want a quarter of %d", got, limit)
	}
}

func TestReadLimit(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    int64
	}{
		{"max\n", 0},
		{"1073741824\n", 1 << 30},
		{"garbage", 0},
		{"0", 0},
	} {
		f := filepath.Join(dir, "limit")
		if err := os.WriteFile(f, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readLimit(f); got != tc.want {
			t.Errorf("readLimit(%q) = %d, want %d", tc.content, got, tc.want)
		}
	}
	if got := readLimit(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing file: %d", got)
	}
}
