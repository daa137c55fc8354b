package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/floedb/floe/internal/pkgerr"
)

// lockFile, in the data folder, is held (flock) by the process that runs
// the node, and names its pid.
const lockFile = "LOCK"

// lockDataDir takes the data folder for this process, so that a second
// process started on the same folder says so at once instead of waiting on
// a store's lock (bbolt's, Badger's) and failing later with a timeout.
// The lock goes with the process, however it ends; unlockDataDir releases
// it sooner.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, pkgerr.Errorf("server", "%w", err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, pkgerr.Errorf("server", "%w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "another process"
			if buf, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(buf))); err == nil && pid > 0 {
					holder = fmt.Sprintf("another process (pid %d)", pid)
				}
			}
			return nil, pkgerr.Errorf("server", "data folder %s is in use by %s: each node needs a folder of its own", dir, holder)
		}
		return nil, pkgerr.Errorf("server", "lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// unlockDataDir releases the folder lock.
func unlockDataDir(f *os.File) {
	if f != nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		_ = f.Close()
	}
}
