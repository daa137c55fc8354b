package tiering

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tempPattern names Put's temporary files (os.CreateTemp puts a number for
// the star). The space keeps them apart from objects: no key has one.
const tempPattern = ".tmp *"

// makeDirs creates the folders from the store's folder down to dir that
// are missing, and fsyncs the parent of each it creates, so that a crash
// does not lose the folder an acknowledged object was renamed into.
func (f *Folder) makeDirs(dir string) error {
	rel, err := filepath.Rel(f.dir, dir)
	if err != nil || rel == "." {
		return err
	}
	parent := f.dir
	for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
		next := filepath.Join(parent, part)
		switch err := os.Mkdir(next, 0o755); {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			info, err := os.Stat(next)
			if err != nil {
				return err
			}
			if !info.IsDir() {
				return fmt.Errorf("%w: %s is an object", ErrKeyConflict, next)
			}
		default:
			return err
		}
		parent = next
	}
	return nil
}

// removeEmptyDirs removes dir and its parents up to (not including) the
// store's folder while they are empty, so deleted objects leave no folders.
// A folder that is not empty (or already gone) ends it: its parents hold it.
// Rmdir, not os.Remove: should a Put have made the path an object file
// meanwhile, os.Remove would delete that object.
func (f *Folder) removeEmptyDirs(dir string) {
	f.dirs.Lock()
	defer f.dirs.Unlock()
	for dir != f.dir && strings.HasPrefix(dir, f.dir+string(filepath.Separator)) {
		if syscall.Rmdir(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// isMissing reports an error that says no file is at a path: it is not
// there, or a parent on the way is a file.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// syncDir makes the creations and renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
