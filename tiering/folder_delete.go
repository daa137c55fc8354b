package tiering

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/pkgerr"
)

// Delete removes the objects and then the folders they leave empty. Keys
// not there (or naming a folder of other objects) are skipped. Every key is
// checked before any object is removed.
func (f *Folder) Delete(ctx context.Context, keys ...string) error {
	paths := make([]string, len(keys))
	for i, key := range keys {
		path, err := f.path(key)
		if err != nil {
			return err
		}
		paths[i] = path
	}
	var errs []error
	for i, path := range paths {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, pkgerr.Errorf("tiering", "folder delete: %w", err))...)
		}
		if err := f.remove(path); err != nil {
			errs = append(errs, pkgerr.Errorf("tiering", "folder delete %s: %w", keys[i], err))
		}
	}
	return errors.Join(errs...)
}

// remove removes the object file at path, if there is one.
func (f *Folder) remove(path string) error {
	info, err := os.Lstat(path)
	if isMissing(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		return nil // no object, objects below it
	}
	if err := os.Remove(path); err != nil && !isMissing(err) {
		return err
	}
	f.removeEmptyDirs(filepath.Dir(path))
	return nil
}
