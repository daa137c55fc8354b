//go:build unix

package diskusage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBytesCountsWrittenBlocks: a folder holds its written files, in
// subfolders too, and not the unwritten part of a sparse file; a missing
// folder is an error.
func TestBytesCountsWrittenBlocks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "written"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	empty, err := Bytes(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	written, err := Bytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if written <= empty {
		t.Fatalf("a folder with 64 KiB written holds %d bytes, an empty one %d", written, empty)
	}

	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	const sparseBytes = 1 << 30
	if err := f.Truncate(sparseBytes); err != nil {
		t.Fatal(err)
	}
	f.Close()
	withSparse, err := Bytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if withSparse < written || withSparse >= written+sparseBytes {
		t.Fatalf("with an unwritten 1 GiB file the folder holds %d bytes, without it %d", withSparse, written)
	}

	if _, err := Bytes(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing folder measured without an error")
	}
}
