package metastate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/pkgerr"
	bolt "go.etcd.io/bbolt"
)

// restoreTempSuffix names the temp file a Restore writes beside the state
// file; Open deletes leftovers of a crashed Restore.
const restoreTempSuffix = ".restore-"

// WriteSnapshot writes a consistent copy of the state file to w: the state
// as of one applied index, which the copy records. Apply goes on meanwhile.
// The copy may be newer than the Raft index a snapshot is taken at; that is
// harmless, since Apply skips entries at or below the copy's applied index.
func (s *State) WriteSnapshot(w io.Writer) error {
	err := s.view(func(tx *bolt.Tx) error {
		_, err := tx.WriteTo(w)
		return err
	})
	if err != nil {
		return pkgerr.Errorf("metastate", "write snapshot: %w", err)
	}
	return nil
}

// Restore replaces the state with a snapshot written by WriteSnapshot. The
// snapshot goes to a temp file beside the state file, is synced and checked,
// then renamed over the state file while reads wait (they see the old state
// or the new one, never a closed file). Afterwards AppliedIndex is the
// snapshot's, the metadata feed starts again there (Changes of an older
// index is not ok) and WaitApplied wakes. A snapshot that is not a state
// file is refused and changes nothing.
func (s *State) Restore(r io.Reader) error {
	tmp, err := s.writeRestoreTemp(r)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone after the rename; a leftover otherwise

	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return ErrClosed
	}
	if err := s.db.Close(); err != nil {
		s.logger.Warn("metastate: close before restore", "err", err)
	}
	s.db = nil
	renameErr := os.Rename(tmp, s.path)
	if renameErr == nil {
		renameErr = syncDir(filepath.Dir(s.path))
	}
	// Reopen whatever is there now: the snapshot, or the old file if the
	// rename failed.
	db, err := openDB(s.path)
	if err != nil {
		return pkgerr.Errorf("metastate", "reopen after restore: %w", errors.Join(renameErr, err))
	}
	s.db = db
	if renameErr != nil {
		return pkgerr.Errorf("metastate", "restore: %w", renameErr)
	}
	s.broken, s.index = nil, nil
	applied, err := readAppliedIndex(db)
	if err != nil {
		// Apply meets the same damage and stops; the feed follows the file
		// from scratch meanwhile.
		s.logger.Error("metastate: read applied index after restore", "err", err)
	}
	s.feed.reset(applied)
	return nil
}

// writeRestoreTemp copies a snapshot into a synced temp file and checks
// that it is a state file of this format.
func (s *State) writeRestoreTemp(r io.Reader) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+restoreTempSuffix+"*")
	if err != nil {
		return "", pkgerr.Errorf("metastate", "restore: %w", err)
	}
	tmp := f.Name()
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkSnapshotFile(tmp)
	}
	if err != nil {
		os.Remove(tmp)
		return "", pkgerr.Errorf("metastate", "restore: %w", err)
	}
	return tmp, nil
}

// checkSnapshotFile opens a snapshot read-only and checks that it is whole
// (as long as its meta page says) and has this package's layout. Deeper
// damage is for the snapshot's own checksum (Raft's snapshot store keeps
// one) to catch.
func checkSnapshotFile(path string) (err error) {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return fmt.Errorf("snapshot is not a state file: %w", err)
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	return db.View(func(tx *bolt.Tx) (err error) {
		// Pages past the end of the file would fault in the mapping:
		// check the length before touching any.
		if tx.Size() > info.Size() {
			return fmt.Errorf("snapshot truncated: %d bytes of %d", info.Size(), tx.Size())
		}
		defer func() {
			if r := recover(); r != nil { // bbolt panics on damaged pages
				err = fmt.Errorf("snapshot damaged: %v", r)
			}
		}()
		return checkLayout(tx)
	})
}

// syncDir makes a rename in dir durable.
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
