package tiering

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// ErrKeyConflict: a folder store cannot hold the object, because its path
// is a folder of other objects, or one of its parents is an object (the
// pair "a/b" and "a/b/c", which S3 allows).
var ErrKeyConflict = pkgerr.New("tiering", "key conflicts with an object's path in the folder store")

// Folder is an ObjectStore in a local folder: the object "a/b" is the file
// a/b below it. Put writes a temporary file next to the object, fsyncs it
// and renames it into place, so a reader sees the old object or the new one,
// never part of one, and an acknowledged Put survives a crash. Temporary
// files are named ".tmp " and a number: a space is in no key, so no object
// can have their name, and List passes them over (as every name no key can
// have). Delete does not fsync: after a crash a deleted object may be back,
// and is deleted again by whatever deleted it (retention).
type Folder struct {
	dir string // absolute
	// dirs orders, in this process, the folders a Put makes (and fills
	// with its temporary file) against the empty folders a Delete
	// removes: without, a Delete of one key could remove the folder
	// another key's Put just made, round after round. Other processes
	// sharing the folder are met by Put's retries.
	dirs sync.RWMutex
}

var _ ObjectStore = (*Folder)(nil)

// NewFolder opens the folder store in dir, creating the folder if needed.
func NewFolder(dir string) (*Folder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, pkgerr.Errorf("tiering", "folder %s: %w", abs, err)
	}
	return &Folder{dir: abs}, nil
}

// String names the store: "file://" and its absolute folder.
func (f *Folder) String() string { return "file://" + f.dir }

// path is where the object key lives, once the key is checked.
func (f *Folder) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(f.dir, filepath.FromSlash(key)), nil
}

// PresignGet returns ErrNoPresign: a folder has no URLs.
func (f *Folder) PresignGet(_ context.Context, key string, _ time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return "", pkgerr.Errorf("tiering", "folder presign %s: %w", key, ErrNoPresign)
}

// Put stores size bytes of r as the object key (see Folder).
func (f *Folder) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	path, err := f.path(key)
	if err != nil {
		return err
	}
	if err := checkPut(size); err != nil {
		return pkgerr.Errorf("tiering", "folder put %s: %w", key, err)
	}
	if err := f.put(ctx, path, r, size); err != nil {
		return pkgerr.Errorf("tiering", "folder put %s: %w", key, err)
	}
	return nil
}

func (f *Folder) put(ctx context.Context, path string, r io.Reader, size int64) (err error) {
	dir := filepath.Dir(path)
	tmp, err := f.createTemp(dir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := copyExact(ctx, tmp, r, size); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		if info, serr := os.Lstat(path); serr == nil && info.IsDir() {
			return fmt.Errorf("%w: objects below %s", ErrKeyConflict, path)
		}
		return err
	}
	// After the rename the new object is in place; a failed fsync here
	// leaves it there, without the promise that it survives a crash.
	return syncDir(dir)
}

// putDirAttempts bounds how often Put makes an object's folders again when
// a concurrent Delete removed one (emptied) before Put's temporary file was
// in it: the folder Put just found or made is gone when it goes on.
const putDirAttempts = 3

// createTemp makes dir (below the store's folder) and a temporary file in it.
func (f *Folder) createTemp(dir string) (*os.File, error) {
	f.dirs.RLock()
	defer f.dirs.RUnlock()
	for attempt := 1; ; attempt++ {
		err := f.makeDirs(dir)
		var tmp *os.File
		if err == nil {
			tmp, err = os.CreateTemp(dir, tempPattern)
		}
		if err == nil || !errors.Is(err, os.ErrNotExist) || attempt == putDirAttempts {
			return tmp, err
		}
	}
}

// copyChunkBytes is how much Put copies between looks at its context.
const copyChunkBytes = 1 << 20

// copyExact copies exactly size bytes of r to w (see exactReader).
func copyExact(ctx context.Context, w io.Writer, r io.Reader, size int64) error {
	src := newExactReader(r, size)
	for left := size; left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.CopyN(w, src, min(left, copyChunkBytes))
		left -= n
		if err != nil {
			return err
		}
	}
	return nil
}
