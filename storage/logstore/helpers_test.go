package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
)

// makeBatch builds a batch of n records whose data encodes tag and index, so
// tests can check what came back.
func makeBatch(t testing.TB, tag string, n, recordBytes int) record.Batch {
	t.Helper()
	b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw, AppendOnly: true}, 0)
	for i := range n {
		data := fmt.Appendf(nil, "%s/%d/", tag, i)
		if pad := recordBytes - len(data); pad > 0 {
			data = append(data, bytes.Repeat([]byte{'.'}, pad)...)
		}
		if err := b.Append(record.AppendOnly, data); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(batch)
}

func openLog(t testing.TB, cfg Config) *Log {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.Dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Log, b record.Batch, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.Append(b, epoch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

// readAll reads every batch from from to the end, checking CRCs, and returns
// them (copied).
func readAll(t testing.TB, l *Log, from int64) ([]record.Batch, error) {
	t.Helper()
	var out []record.Batch
	for from < l.EndOffset() {
		recs, err := l.Read(from, 1<<20)
		if err != nil {
			return out, err
		}
		it := record.NewBatchIterator(recs.Data, true)
		for it.Next() {
			out = append(out, bytes.Clone(it.Batch()))
		}
		recs.Release()
		if it.Err() != nil {
			return out, it.Err()
		}
		if recs.NextOffset <= from {
			return out, fmt.Errorf("read at %d made no progress", from)
		}
		from = recs.NextOffset
	}
	return out, nil
}

// crashCopy copies the log's folder as it is now, while the log is open: the
// state a crash (SIGKILL) would leave, page cache included. The recovery
// point in it is whatever was last checkpointed.
func crashCopy(t testing.TB, l *Log) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join(l.Dir(), e.Name()), filepath.Join(dst, e.Name()))
	}
	return dst
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// fakeClock is a settable clock for age-based roll and retention.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func segmentFile(dir string, base int64) string {
	return filepath.Join(dir, segmentName(base)+logSuffix)
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("want %v, got %v", target, err)
	}
}

// waitFor waits until cond holds, failing the test after a minute.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
