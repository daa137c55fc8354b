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

	srcs        []exportSource // the table's, or one per partition
	concurrency int
	sink        exportSink
}

// NewExport prepares an export of tbl: a log's end in every bucket is
// fixed here, before anything is read, so that the export ends, and is
// what the table held when it began. A Snapshot of a log table is refused.
// tbl is a table's handle, or a partition's.
func NewExport(ctx context.Context, tbl *client.Table, o ExportOptions) (*Export, error) {
	return NewPartitionsExport(ctx, []*client.Table{tbl}, o)
}

// NewPartitionsExport prepares one export of several partitions of a
// partitioned table (their handles, client.Table.Partition), each as
// NewExport would.
func NewPartitionsExport(ctx context.Context, tables []*client.Table, o ExportOptions) (*Export, error) {
	e := &Export{concurrency: o.Concurrency}
	for _, tbl := range tables {
		src, noun, err := newExportSource(ctx, tbl, o)
		if err != nil {
			return nil, err
		}
		e.srcs, e.Noun = append(e.srcs, src), noun
	}
	if e.Noun == "" {
		e.Noun = "record"
	}
	return e, nil
}

// newExportSource prepares the source of one table or partition.
func newExportSource(ctx context.Context, tbl *client.Table, o ExportOptions) (exportSource, string, error) {
	pk := len(tbl.Info().PrimaryKey) > 0
	if len(o.Columns) > 0 {
		if _, _, err := tbl.Columns(o.Columns); err != nil {
			return nil, "", err
		}
	}
	if o.Snapshot {
		if !pk {
			return nil, "", fmt.Errorf("a snapshot needs a primary-key table")
		}
		src := &snapshotSource{tbl: tbl, order: o.Buckets, opts: client.RowScannerOptions{Timeout: o.Timeout}}
		if len(o.Columns) > 0 {
			src.columns, src.schema, _ = tbl.Columns(o.Columns)
		}
		return src, "row", nil
	}
	ranges, err := ResolveRanges(ctx, tbl, o.Buckets, o.From, false, o.Timeout)
	if err != nil {
		return nil, "", err
	}
	src := newLogSource(tbl, o.Buckets, ranges)
	src.columns = o.Columns
	if pk {
		return src, "changelog record", nil
	}
	return src, "record", nil
}

// exportItem is one bucket of one source.
type exportItem struct {
	src    exportSource
	name   string // the partition's, "" for a table's handle
	bucket int32
}

// Run reads the buckets, Concurrency at a time, and writes their lines to
// w. The first bucket that fails stops the others.
func (e *Export) Run(ctx context.Context, w io.Writer) error {
	e.sink.w = w
	var items []exportItem
	for _, src := range e.srcs {
		for _, b := range src.buckets() {
			items = append(items, exportItem{src: src, name: src.partition(), bucket: b})
		}
	}
	return fanout.FirstError(ctx, items, e.concurrency, func(ctx context.Context, it exportItem) error {
		out := &bucketOut{sink: &e.sink}
		err := it.src.read(ctx, it.bucket, out)
		if err == nil {
			err = out.flush()
		}
		if err != nil && it.name != "" {
			return fmt.Errorf("partition %s bucket %d: %w", it.name, it.bucket, err)
		}
		if err != nil {
			return fmt.Errorf("bucket %d: %w", it.bucket, err)
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
	p := ExportProgress{Lines: e.sink.lines.Load(), Bytes: e.sink.bytes.Load(),
		OffsetsDone: e.sink.offsets.Load(), BucketsDone: int(e.sink.bucketsDone.Load())}
	for _, src := range e.srcs {
		p.Offsets += src.offsets()
		p.Buckets += len(src.buckets())
	}
	return p
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
