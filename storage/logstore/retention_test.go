package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func removeFile(dir, name string) error { return os.Remove(filepath.Join(dir, name)) }

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10, RetentionBytes: 200 << 10})
	for i := range 400 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), int32(i/100))
	}
	before := l.Segments()
	n, err := l.EnforceRetention()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	after := l.Segments()
	if len(after) != len(before)-n || after[0].BaseOffset != before[n].BaseOffset {
		t.Fatalf("segments %d → %d, deleted %d", len(before), len(after), n)
	}
	var total int64
	for _, s := range after {
		total += s.Bytes
	}
	if total < 200<<10 || total-after[0].Bytes >= 200<<10 {
		t.Fatalf("kept %d bytes; the oldest kept segment should be needed to stay at or above 200 KiB", total)
	}
	if l.StartOffset() != after[0].BaseOffset {
		t.Fatalf("start offset %d, first segment %d", l.StartOffset(), after[0].BaseOffset)
	}
	if _, err := os.Stat(segmentFile(dir, before[0].BaseOffset)); !os.IsNotExist(err) {
		t.Fatalf("deleted segment file still there: %v", err)
	}
	_, err = l.Read(0, 100)
	wantErr(t, err, ErrOffsetOutOfRange)
	if got, err := readAll(t, l, l.StartOffset()); err != nil || len(got) == 0 {
		t.Fatalf("read from new start: %v", err)
	}
	if e := l.Epochs(); e[0].StartOffset != l.StartOffset() {
		t.Fatalf("epoch cache not truncated from the start: %+v", e)
	}
	l.Close()
	l2 := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10})
	if l2.StartOffset() != after[0].BaseOffset || l2.EndOffset() != 400 {
		t.Fatalf("reopen: [%d, %d)", l2.StartOffset(), l2.EndOffset())
	}
}

func TestRetentionByAge(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, RetentionAge: time.Hour, Now: clock.Now})
	for i := range 100 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), 0)
	}
	oldSegs := len(l.Segments())
	clock.Advance(2 * time.Hour)
	for i := range 100 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), 0)
	}
	// The segment holding both old and new batches stays: its newest is fresh.
	n, err := l.EnforceRetention()
	if err != nil || n != oldSegs-1 {
		t.Fatalf("deleted %d segments, want %d: %v", n, oldSegs-1, err)
	}
	if n, _ := l.EnforceRetention(); n != 0 {
		t.Fatalf("second pass deleted %d", n)
	}
	clock.Advance(2 * time.Hour)
	n, _ = l.EnforceRetention()
	if got := l.Segments(); len(got) != 1 {
		t.Fatalf("everything expired: %d deleted, %d segments left (the active one must stay)", n, len(got))
	}
}

// TestReaderOutlivesDeletion: a view handed out before retention deleted its
// segment stays readable until released.
func TestReaderOutlivesDeletion(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, RetentionBytes: 1})
	for i := range 200 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), 0)
	}
	recs, err := l.Read(0, 32<<10)
	if err != nil {
		t.Fatal(err)
	}
	want := string(recs.Data)
	if n, err := l.EnforceRetention(); err != nil || n == 0 {
		t.Fatalf("retention: %d %v", n, err)
	}
	if string(recs.Data) != want {
		t.Fatal("view changed after its segment was deleted")
	}
	it := recs.Batches()
	for it.Next() {
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	recs.Release()
	recs.Release()
}
