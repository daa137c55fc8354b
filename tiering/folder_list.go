package tiering

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/floedb/floe/internal/pkgerr"
)

// List calls fn for the objects whose keys start with prefix, in key order.
//
// Walking folders in name order is not key order: the file "a-b" and the
// folder "a" (holding "a/b") are "a-b" < "a" by name, but the keys are
// "a-b" < "a/b" only because '-' sorts below '/'. So each folder's entries
// are sorted by what they contribute to keys: a file by its name, a folder
// by its name and a slash. That order within every folder is the order of
// the full keys, and List streams the objects without collecting them.
func (f *Folder) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	dir, first := splitPrefix(prefix)
	path, keyDir := f.dir, ""
	if dir != "" {
		path, keyDir = filepath.Join(f.dir, filepath.FromSlash(dir)), dir+"/"
	}
	return f.walk(ctx, path, keyDir, first, fn)
}

// walk lists the objects below the folder at path, whose keys start with
// keyDir, taking at this level only the names that start with first.
func (f *Folder) walk(ctx context.Context, path, keyDir, first string, fn func(ObjectInfo) error) error {
	entries, err := readDirInKeyOrder(path)
	if isMissing(err) {
		return nil // nothing below this prefix
	}
	if err != nil {
		return pkgerr.Errorf("tiering", "folder list %s: %w", keyDir, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), first) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return pkgerr.Errorf("tiering", "folder list %s: %w", keyDir, err)
		}
		key := keyDir + e.Name()
		if e.IsDir() {
			if err := f.walk(ctx, filepath.Join(path, e.Name()), key+"/", "", fn); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if isMissing(err) {
			continue // deleted since the folder was read
		}
		if err != nil {
			return pkgerr.Errorf("tiering", "folder list %s: %w", key, err)
		}
		if err := fn(ObjectInfo{Key: key, Size: info.Size(), Modified: info.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

// readDirInKeyOrder reads a folder's entries that can be part of a key
// (not Put's temporary files, nor anything else no key could name), sorted
// as their keys sort (see List).
func readDirInKeyOrder(path string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return ValidateKey(e.Name()) != nil })
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(keyOrderName(a), keyOrderName(b)) })
	return entries, nil
}

// keyOrderName is what an entry contributes to the keys below its folder.
func keyOrderName(e os.DirEntry) string {
	if e.IsDir() {
		return e.Name() + "/"
	}
	return e.Name()
}
