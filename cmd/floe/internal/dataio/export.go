package dataio

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/fanout"
)

// exportChunkBytes is how much of one bucket's output gathers before it goes
// to the shared output in one write.
const exportChunkBytes = 64 << 10

// ExportOptions are the options of an export.
type ExportOptions struct {
	// Snapshot: a primary-key table's current rows, not its changelog.
	Snapshot bool
	// From is where each bucket's log starts (not with Snapshot); the
	// export ends at the high watermarks of its start.
	From client.StartPosition
	// Buckets are the buckets to export, each of the table.
	Buckets []int32
	// Concurrency is the number of buckets read at once.
	Concurrency int
	// Timeout bounds each offset lookup and each row scanner call.
	Timeout time.Duration
	// Columns, when set, are the only columns exported, in that order: a
	// log's Arrow batches are cut by the leaders (client.LogScannerOptions
	// .Columns), a snapshot's rows here.
	Columns []string
}

// Export writes a table's records (a log, or a primary-key table's
// changelog, as floe consume prints them) or a primary-key table's current
// rows (as floe lookup prints them) as JSON lines, buckets read in
// parallel: each bucket's lines stay in its order, and buckets interleave
// whole chunks of lines.
type Export struct {
	// Noun is what the export's lines are: "record", "changelog record"
	// or "row".
	Noun string

	src         exportSource
	concurrency int
	sink        exportSink
}

// NewExport prepares an export of tbl: a log's end in every bucket is
// fixed here, before anything is read, so that the export ends, and is
// what the table held when it began. A Snapshot of a log table is refused.
func NewExport(ctx context.Context, tbl *client.Table, o ExportOptions) (*Export, error) {
	e := &Export{concurrency: o.Concurrency}
	pk := len(tbl.Info().PrimaryKey) > 0
	if len(o.Columns) > 0 {
		if _, _, err := tbl.Columns(o.Columns); err != nil {
			return nil, err
		}
	}
	if o.Snapshot {
		if !pk {
			return nil, fmt.Errorf("a snapshot needs a primary-key table")
		}
		src := &snapshotSource{tbl: tbl, order: o.Buckets, opts: client.RowScannerOptions{Timeout: o.Timeout}}
		if len(o.Columns) > 0 {
			src.columns, src.schema, _ = tbl.Columns(o.Columns)
		}
		e.src, e.Noun = src, "row"
		return e, nil
	}
	ranges, err := ResolveRanges(ctx, tbl, o.Buckets, o.From, false, o.Timeout)
	if err != nil {
		return nil, err
	}
	src := newLogSource(tbl, o.Buckets, ranges)
	src.columns = o.Columns
	e.src, e.Noun = src, "record"
	if pk {
		e.Noun = "changelog record"
	}
	return e, nil
}

// Run reads the buckets, Concurrency at a time, and writes their lines to
// w. The first bucket that fails stops the others.
func (e *Export) Run(ctx context.Context, w io.Writer) error {
	e.sink.w = w
	return fanout.FirstError(ctx, e.src.buckets(), e.concurrency, func(ctx context.Context, b int32) error {
		out := &bucketOut{sink: &e.sink}
		err := e.src.read(ctx, b, out)
		if err == nil {
			err = out.flush()
		}
		if err != nil {
			return fmt.Errorf("bucket %d: %w", b, err)
		}
		e.sink.bucketsDone.Add(1)
		return nil
	})
}

// ExportProgress is how far an export is.
type ExportProgress struct {
	// Lines and Bytes written so far.
	Lines, Bytes int64
	// OffsetsDone of Offsets, the log offsets the export covers (0 when
	// not known in advance: a snapshot).
	OffsetsDone, Offsets int64
	// BucketsDone of Buckets.
	BucketsDone, Buckets int
}

// Progress is how far the export is; safe to call while it runs.
func (e *Export) Progress() ExportProgress {
	return ExportProgress{Lines: e.sink.lines.Load(), Bytes: e.sink.bytes.Load(),
		OffsetsDone: e.sink.offsets.Load(), Offsets: e.src.offsets(),
		BucketsDone: int(e.sink.bucketsDone.Load()), Buckets: len(e.src.buckets())}
}

// exportSink is the output the buckets of an export share, and its counts.
type exportSink struct {
	mu sync.Mutex // one chunk written at a time
	w  io.Writer

	lines, bytes, offsets, bucketsDone atomic.Int64
}

// write writes one chunk of a bucket's lines.
func (s *exportSink) write(chunk []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.w.Write(chunk)
	s.bytes.Add(int64(n))
	return err
}

// bucketOut gathers one bucket's lines and hands them to the sink a chunk
// at a time: buckets read in parallel interleave whole chunks, and each
// bucket's lines stay in its order.
type bucketOut struct {
	sink *exportSink
	buf  []byte
}

// add adds one line, its newline included.
func (o *bucketOut) add(line []byte) error {
	o.buf = append(o.buf, line...)
	o.sink.lines.Add(1)
	if len(o.buf) >= exportChunkBytes {
		return o.flush()
	}
	return nil
}

// flush writes the lines gathered.
func (o *bucketOut) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	err := o.sink.write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// advance counts n more log offsets done, for progress.
func (o *bucketOut) advance(n int64) { o.sink.offsets.Add(n) }
