package dataio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// exportSource reads the buckets of an export, each as JSON lines in the
// bucket's order. The sources here read through the bucket leaders: a log
// (or a primary-key table's changelog) with a LogScanner, a primary-key
// table's current rows with a RowScanner. Reading sealed log segments or KV
// snapshots straight from object storage, past the leaders, is another
// exportSource: the Export around it (parallel buckets, output, progress,
// summary) stays as it is.
type exportSource interface {
	// buckets lists the buckets to read.
	buckets() []int32
	// offsets is the number of log offsets the export covers, for
	// progress; 0 when it is not known in advance.
	offsets() int64
	// read writes bucket's lines to out, in the bucket's order.
	read(ctx context.Context, bucket int32, out *bucketOut) error
	// partition names the source's partition; "" for a table's.
	partition() string
}

// partitionOf names the partition of a handle; "" for a table's.
func partitionOf(tbl *client.Table) string {
	if p := tbl.PartitionInfo(); p != nil {
		return p.Name
	}
	return ""
}

// logSource exports records of a log, each bucket from its start to its
// high watermark as of the start of the export, as floe consume prints them.
type logSource struct {
	tbl       *client.Table
	order     []int32
	ranges    map[int32]BucketRange // a bucket without one has nothing to read
	changelog bool                  // a primary-key table's: _change on each line
	columns   []string              // nil: all
}

func newLogSource(tbl *client.Table, buckets []int32, ranges []BucketRange) *logSource {
	s := &logSource{tbl: tbl, order: buckets, ranges: make(map[int32]BucketRange, len(ranges)),
		changelog: len(tbl.Info().PrimaryKey) > 0}
	for _, r := range ranges {
		s.ranges[r.Bucket] = r
	}
	return s
}

func (s *logSource) buckets() []int32 { return s.order }

func (s *logSource) partition() string { return partitionOf(s.tbl) }

func (s *logSource) offsets() int64 {
	var n int64
	for _, r := range s.ranges {
		n += r.End - r.Start
	}
	return n
}

func (s *logSource) read(ctx context.Context, bucket int32, out *bucketOut) error {
	r, ok := s.ranges[bucket]
	if !ok {
		return nil
	}
	sc, err := s.tbl.NewLogScanner(client.LogScannerOptions{Columns: s.columns})
	if err != nil {
		return err
	}
	defer sc.Close()
	codec, err := record.NewJSONCodec(sc.Schema())
	if err != nil {
		return err
	}
	pos := r.Start // the offsets below it are counted as done
	var line []byte
	err = PollRanges(ctx, sc, []BucketRange{r}, PollOptions{}, func(rec client.ScanRecord) error {
		var err error
		if line, err = AppendRecordJSON(line[:0], codec, rec, s.changelog); err != nil {
			return fmt.Errorf("bucket %d offset %d: %w", rec.Bucket, rec.Offset, err)
		}
		out.advance(rec.Offset + 1 - pos)
		pos = rec.Offset + 1
		return out.add(line)
	}, func() error { return nil })
	if err != nil {
		return err
	}
	out.advance(r.End - pos) // control batches past the last record
	return nil
}

// snapshotSource exports the current rows of a primary-key table, read from
// each bucket's leader, as floe lookup prints them.
type snapshotSource struct {
	tbl   *client.Table
	order []int32
	opts  client.RowScannerOptions
	// columns, when set, cut each row to those columns of the table
	// (schema).
	columns []int
	schema  record.Schema
}

func (s *snapshotSource) buckets() []int32 { return s.order }

func (s *snapshotSource) partition() string { return partitionOf(s.tbl) }
func (s *snapshotSource) offsets() int64    { return 0 }

func (s *snapshotSource) read(ctx context.Context, bucket int32, out *bucketOut) error {
	sc, err := s.tbl.NewRowScanner(bucket, s.opts)
	if err != nil {
		return err
	}
	codec := s.tbl.JSONCodec()
	if s.columns != nil {
		if codec, err = record.NewJSONCodec(s.schema); err != nil {
			return err
		}
	}
	var line, cut []byte
	full := s.tbl.Schema()
	for {
		rows, err := sc.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, row := range rows {
			if s.columns != nil {
				if cut, err = record.ProjectRow(full, row, s.columns, cut[:0]); err != nil {
					return fmt.Errorf("bucket %d: %w", bucket, err)
				}
				row = cut
			}
			if line, err = codec.AppendJSON(line[:0], row); err != nil {
				return fmt.Errorf("bucket %d: %w", bucket, err)
			}
			line = append(line, '\n')
			if err := out.add(line); err != nil {
				return err
			}
		}
	}
}
