package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
)

var errInjectedEIO = errors.New("injected EIO")

// flakyDisk fails one fsync when armed, the way Linux does: the failed
// fsync reports the error once, and a later fsync of the same file succeeds
// although the pages the first one lost never reach the disk.
type flakyDisk struct {
	armed   atomic.Bool
	calls   atomic.Int64
	failing chan struct{} // gets a value when the armed fsync starts
	hold    chan struct{} // when set, the failing fsync waits for it to close
}

func newFlakyDisk() *flakyDisk { return &flakyDisk{failing: make(chan struct{}, 1)} }

func (d *flakyDisk) fault(int64) error {
	d.calls.Add(1)
	if !d.armed.CompareAndSwap(true, false) {
		return nil
	}
	d.failing <- struct{}{}
	if d.hold != nil {
		<-d.hold
	}
	return errInjectedEIO
}

func wantSyncFailure(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrSyncFailed) || !errors.Is(err, errInjectedEIO) {
		t.Fatalf("%s: want ErrSyncFailed wrapping the injected error, got %v", what, err)
	}
}

// appendDurable appends n batches of 3 records and fsyncs them, returning the
// durable end.
func appendDurable(t *testing.T, l *Log, n int) int64 {
	t.Helper()
	for i := range n {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 3, 40), 0)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l.WrittenEnd()
}

// checkRecoveredTo reopens dir and checks it holds exactly the batches below
// end, left no sync-failed marker, and appends again at end.
func checkRecoveredTo(t *testing.T, dir string, end int64) {
	t.Helper()
	l := openLog(t, Config{Dir: dir})
	if l.EndOffset() != end {
		t.Fatalf("reopened a failed log at end %d, want its last durable offset %d", l.EndOffset(), end)
	}
	if _, err := readAll(t, l, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, syncFailedFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sync-failed marker left after recovery: %v", err)
	}
	if info := mustAppend(t, l, makeBatch(t, "after", 3, 40), 1); info.BaseOffset != end {
		t.Fatalf("append after recovery at %d, want %d", info.BaseOffset, end)
	}
}

// TestSyncFailure: under every sync policy, a failed fsync fails the log for
// good: every later write and sync returns the failure, Close does not fsync
// again or move the recovery point, and reopening serves only what was
// durable before the failure.
func TestSyncFailure(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			disk := newFlakyDisk()
			dir := t.TempDir()
			l := openLog(t, Config{Dir: dir, Sync: p, SyncInterval: time.Millisecond,
				RecoveryPointInterval: time.Hour, FsyncFault: disk.fault})
			durableEnd := appendDurable(t, l, 3)

			disk.armed.Store(true)
			_, err := l.Append(makeBatch(t, "lost", 3, 40), 0)
			switch p {
			case SyncAlways: // the append's own fsync fails
				wantSyncFailure(t, "append", err)
			case SyncInterval: // the background fsync fails; Sync joins or follows it
				if err != nil {
					t.Fatal(err)
				}
				<-disk.failing
				wantSyncFailure(t, "sync after a failed interval fsync", l.Sync())
			case SyncNever: // an explicit Sync fails
				if err != nil {
					t.Fatal(err)
				}
				wantSyncFailure(t, "sync", l.Sync())
			}
			wantSyncFailure(t, "Failed", l.Failed())

			// The fault is spent: a new fsync would succeed, and must not be tried.
			_, err = l.Append(makeBatch(t, "later", 3, 40), 0)
			wantSyncFailure(t, "append after the failure", err)
			replicated := makeBatch(t, "replicated", 3, 40)
			replicated.SetBaseOffset(l.WrittenEnd())
			_, err = l.AppendReplicated(replicated)
			wantSyncFailure(t, "replicated append after the failure", err)
			wantSyncFailure(t, "sync after the failure", l.Sync())
			wantSyncFailure(t, "epoch assignment after the failure", l.AssignEpoch(1))
			wantSyncFailure(t, "truncation after the failure", l.Truncate(3))
			calls := disk.calls.Load()
			wantSyncFailure(t, "close", l.Close())
			if got := disk.calls.Load(); got != calls {
				t.Fatalf("Close fsynced %d times after a failed fsync", got-calls)
			}
			if buf, err := readCheckpoint(dir, recoveryPointFile); err == nil {
				if rp, _ := decodePosition(recoveryPointFile, buf); rp.offset > durableEnd {
					t.Fatalf("recovery point %d moved past the durable end %d", rp.offset, durableEnd)
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			checkRecoveredTo(t, dir, durableEnd)
		})
	}
}

// TestSyncFailedMarker: a log that failed and then crashed (no Close)
// recovers to its last durable offset, although the batches after it are in
// the file with valid checksums (the page cache still shows them); with the
// marker damaged, it falls back on the recovery point.
func TestSyncFailedMarker(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		t.Run(fmt.Sprintf("damaged=%v", damaged), func(t *testing.T) {
			disk := newFlakyDisk()
			dir := t.TempDir()
			l := openLog(t, Config{Dir: dir, RecoveryPointInterval: time.Hour, FsyncFault: disk.fault})
			durableEnd := appendDurable(t, l, 3)
			if err := l.writeRecoveryPoint(); err != nil {
				t.Fatal(err)
			}
			disk.armed.Store(true)
			_, err := l.Append(makeBatch(t, "lost", 3, 40), 0)
			wantSyncFailure(t, "append", err)

			buf, err := readCheckpoint(dir, syncFailedFile)
			if err != nil {
				t.Fatalf("no sync-failed marker: %v", err)
			}
			if pos, err := decodePosition(syncFailedFile, buf); err != nil || pos.offset != durableEnd {
				t.Fatalf("marker holds offset %d (%v), want the durable end %d", pos.offset, err, durableEnd)
			}
			l.crash()
			if n := validBatchesIn(t, segmentFile(dir, 0)); n != 4 {
				t.Fatalf("the segment file holds %d valid batches, want 4 (the lost one included)", n)
			}
			if damaged {
				flipBit(t, filepath.Join(dir, syncFailedFile), 10)
			}
			checkRecoveredTo(t, dir, durableEnd)
		})
	}
}

// validBatchesIn counts the checksummed batches at the start of a segment
// file.
func validBatchesIn(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		b, err := record.Check(data)
		if err != nil {
			return n
		}
		data = data[len(b):]
		n++
	}
}

// TestSyncFailureUnderGroupCommit: every append waiting on a group fsync
// that fails gets the failure, whether its batch was covered by that fsync or
// written while it ran, and nothing of the group is ever acknowledged or
// served as durable, now or after reopening.
func TestSyncFailureUnderGroupCommit(t *testing.T) {
	disk := newFlakyDisk()
	disk.hold = make(chan struct{})
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir, Sync: SyncAlways, FsyncFault: disk.fault})
	durableEnd := appendDurable(t, l, 2)

	disk.armed.Store(true)
	syncer := make(chan error, 1)
	go func() {
		_, err := l.Append(makeBatch(t, "syncer", 3, 40), 0)
		syncer <- err
	}()
	<-disk.failing // the syncer's fsync runs, and will fail
	const waiters = 5
	results := make(chan error, waiters)
	for i := range waiters {
		_, wait, err := l.AppendPending(makeBatch(t, fmt.Sprint("waiter", i), 3, 40), 0)
		if err != nil {
			t.Fatal(err)
		}
		go func() { results <- wait() }()
	}
	close(disk.hold)
	wantSyncFailure(t, "the syncer", <-syncer)
	for range waiters {
		wantSyncFailure(t, "a waiter of the failed group", <-results)
	}
	if got := l.EndOffset(); got != durableEnd {
		t.Fatalf("readers see up to %d, want the durable end %d", got, durableEnd)
	}
	_, err := l.Append(makeBatch(t, "after", 3, 40), 0)
	wantSyncFailure(t, "append after the failed group", err)
	wantSyncFailure(t, "close", l.Close())
	checkRecoveredTo(t, dir, durableEnd)
}
