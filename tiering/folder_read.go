package tiering

import (
	"context"
	"io"
	"io/fs"
	"os"

	"github.com/floedb/floe/internal/pkgerr"
)

// Get reads length bytes of the object key from offset on (length < 0: to
// the end). The reader reads the object as it was when Get opened it, even
// if a Put replaces it meanwhile.
func (f *Folder) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	path, err := f.path(key)
	if err != nil {
		return nil, err
	}
	if err := checkGet(offset); err != nil {
		return nil, pkgerr.Errorf("tiering", "folder get %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, pkgerr.Errorf("tiering", "folder get %s: %w", key, err)
	}
	file, info, err := openObject(path)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "folder get %s: %w", key, err)
	}
	n := max(info.Size()-offset, 0)
	if length >= 0 {
		n = min(n, length)
	}
	return &fileRange{Reader: io.NewSectionReader(file, offset, n), file: file}, nil
}

// fileRange reads a range of an open object file.
type fileRange struct {
	io.Reader
	file *os.File
}

func (r *fileRange) Close() error { return r.file.Close() }

// Stat describes the object key.
func (f *Folder) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	path, err := f.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, pkgerr.Errorf("tiering", "folder stat %s: %w", key, err)
	}
	info, err := os.Stat(path)
	if err == nil && !info.Mode().IsRegular() {
		err = fs.ErrNotExist // a folder of other objects
	}
	if err != nil {
		return ObjectInfo{}, pkgerr.Errorf("tiering", "folder stat %s: %w", key, objectError(err))
	}
	return ObjectInfo{Key: key, Size: info.Size(), Modified: info.ModTime()}, nil
}

// openObject opens the object file at path; a path with no file (or with a
// folder of other objects) is ErrNotFound.
func openObject(path string) (*os.File, fs.FileInfo, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, objectError(err)
	}
	info, err := file.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		file.Close()
		return nil, nil, objectError(err)
	}
	return file, info, nil
}

// objectError turns a file system's "no such file" into ErrNotFound and
// keeps any other error.
func objectError(err error) error {
	if isMissing(err) {
		return ErrNotFound
	}
	return err
}
