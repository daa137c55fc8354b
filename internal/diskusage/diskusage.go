package diskusage

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// Bytes is the disk space the files under dir hold: on Unix their
// allocated blocks, so preallocated but unwritten (sparse) parts do not
// count; elsewhere their sizes. Files deleted while it walks are skipped;
// a missing dir is an error.
func Bytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != dir {
			return nil
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		total += fileBytes(info)
		return nil
	})
	return total, err
}

// regularSize is the size of a regular file, 0 for anything else.
func regularSize(info fs.FileInfo) int64 {
	if info.Mode().IsRegular() {
		return info.Size()
	}
	return 0
}
