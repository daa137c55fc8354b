package tiering_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floedb/floe/tiering"
)

// The folder store's own rules, beyond the contract: its files and folders.

func newFolder(t *testing.T) (*tiering.Folder, string) {
	dir := t.TempDir()
	f, err := tiering.NewFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// files lists every file and folder below dir, slash-separated.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFolderLayout(t *testing.T) {
	f, dir := newFolder(t)
	put(t, f, "seg/t1/00001.log", "data")
	want := []string{"seg/", "seg/t1/", "seg/t1/00001.log"}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "seg", "t1", "00001.log")); err != nil || string(b) != "data" {
		t.Fatalf("object file = %q, %v", b, err)
	}
}

func TestFolderFailedPutLeavesNoFile(t *testing.T) {
	f, dir := newFolder(t)
	put(t, f, "a/old", "old")
	for _, key := range []string{"a/old", "a/new", "b/new"} {
		if err := f.Put(t.Context(), key, &failingReader{n: 10, err: errors.New("broke")}, 100); err == nil {
			t.Fatalf("put %s from a failing reader succeeded", key)
		}
	}
	// b/ stays, empty: Put made it before the reader failed, and only
	// Delete removes folders.
	if got, want := files(t, dir), []string{"a/", "a/old", "b/"}; !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q (no temporary file)", got, want)
	}
}

func TestFolderListSkipsForeignFiles(t *testing.T) {
	f, dir := newFolder(t)
	put(t, f, "k/obj", "k/obj")
	for _, name := range []string{".tmp 123", "k/.tmp 456", "k/with space", "k/sub dir/x"} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := listKeys(t, f, ""); !slices.Equal(got, []string{"k/obj"}) {
		t.Fatalf("list = %q, want only the object", got)
	}
}

func TestFolderDeleteRemovesEmptyFolders(t *testing.T) {
	f, dir := newFolder(t)
	put(t, f, "a/b/c", "1")
	put(t, f, "a/d", "2")
	if err := f.Delete(t.Context(), "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if got, want := files(t, dir), []string{"a/", "a/d"}; !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	if err := f.Delete(t.Context(), "a/d"); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Fatalf("files = %q, want none", got)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the store's folder: %v", err)
	}
}

func TestFolderKeyConflict(t *testing.T) {
	f, dir := newFolder(t)
	put(t, f, "a/b", "object")
	if err := f.Put(t.Context(), "a/b/c", strings.NewReader("x"), 1); !errors.Is(err, tiering.ErrKeyConflict) {
		t.Fatalf("put below an object: %v, want ErrKeyConflict", err)
	}
	put(t, f, "x/y/z", "object")
	if err := f.Put(t.Context(), "x/y", strings.NewReader("x"), 1); !errors.Is(err, tiering.ErrKeyConflict) {
		t.Fatalf("put over a folder of objects: %v, want ErrKeyConflict", err)
	}
	if err := f.Delete(t.Context(), "x/y"); err != nil {
		t.Fatalf("delete of a folder's key: %v", err)
	}
	if got, want := files(t, dir), []string{"a/", "a/b", "x/", "x/y/", "x/y/z"}; !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
}

func TestFolderString(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	f, err := tiering.NewFolder("remote")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.String(), "file://"+filepath.Join(dir, "remote"); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// TestFolderPutBesideDelete: a Delete that empties a folder removes it,
// and a Put into that folder at the same moment makes it again.
func TestFolderPutBesideDelete(t *testing.T) {
	f, _ := newFolder(t)
	const rounds = 200
	var wg sync.WaitGroup
	for _, key := range []string{"r/s/a", "r/s/b"} {
		wg.Go(func() {
			for range rounds {
				if err := f.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
					t.Error(err)
					return
				}
				if err := f.Delete(t.Context(), key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
