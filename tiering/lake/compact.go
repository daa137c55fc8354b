package lake

import (
	"bytes"
	"context"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Compaction of a log table's small files. A round writes one data file
// per bucket it read, as big as what the bucket took since the last one:
// at a short datalake.freshness, or a slow bucket, files of kilobytes,
// which engines open one by one. A round also merges, per bucket, a run
// of consecutive small committed files into one, in the same snapshot
// that adds its new files (StageReplace), so a bucket's files grow
// toward DefaultRoundBytes and its manifests are folded along.
const (
	// compactSmallBytes and compactSmallRows: a data file under both is
	// small. Rows count too: a file of a round that read its 128 MiB of
	// rows that compress well is small in bytes, and merging such files,
	// which engines read fast, would cost every round a rewrite of its
	// data; a merged file of such rows is left as it is too, so no row is
	// merged over and over.
	compactSmallBytes = 16 << 20
	compactSmallRows  = 1 << 16
	// compactMaxRows bounds the rows one merge writes.
	compactMaxRows = 1 << 20
	// compactMinFiles: a run of small files is merged once it has this
	// many.
	compactMinFiles = 8
	// compactMaxBytes bounds the files one merge reads.
	compactMaxBytes = DefaultRoundBytes
)

// smallRun returns the first run of at least minFiles consecutive files of
// a bucket (spans, in offset order) under small bytes and
// compactSmallRows rows each, at most maxBytes and compactMaxRows in all;
// nil when there is none.
func smallRun(spans []FileSpan, small, maxBytes int64, minFiles int) []FileSpan {
	for i := 0; i < len(spans); {
		j, total, rows := i, int64(0), int64(0)
		for j < len(spans) && spans[j].Size < small && spans[j].Rows < compactSmallRows &&
			total+spans[j].Size <= maxBytes && rows+spans[j].Rows <= compactMaxRows {
			total += spans[j].Size
			rows += spans[j].Rows
			j++
		}
		if j-i >= minFiles {
			return spans[i:j]
		}
		i = max(j, i+1)
	}
	return nil
}

// compactFiles merges spans, consecutive files of one bucket of the
// version ix indexes, into one data file of the lake schema ls: their
// rows below offset below in order, every column (system ones too)
// copied as it is, a column a file lacks null.
func (t *Table) compactFiles(ctx context.Context, ix *Index, spans []FileSpan, ls Schema, below int64) ([]byte, DataFile, error) {
	as, err := ArrowSchema(ls)
	if err != nil {
		return nil, DataFile{}, err
	}
	cols := make([]ScanColumn, len(ls.Fields))
	for i, f := range ls.Fields {
		cols[i] = ScanColumn{FieldID: f.ID, Type: as.Field(i).Type}
	}
	var buf bytes.Buffer
	fw, err := NewFileWriter(&buf, ls, as)
	if err != nil {
		return nil, DataFile{}, err
	}
	for _, span := range spans {
		scan, err := t.OpenScan(ctx, span, ix.Schema, cols, span.From, batchRows)
		if err != nil {
			return nil, DataFile{}, err
		}
		for {
			c, err := scan.Next(ctx, batchRows)
			if err == io.EOF {
				break
			}
			if err != nil {
				scan.Close()
				return nil, DataFile{}, err
			}
			n, _ := slices.BinarySearch(c.Offsets, below)
			if n > 0 {
				rec := array.NewRecordBatch(as, c.Columns, int64(c.Rows())).NewSlice(0, int64(n))
				err = fw.Write(rec)
				rec.Release()
			}
			c.Release()
			if err != nil {
				scan.Close()
				return nil, DataFile{}, err
			}
			if n < c.Rows() {
				break // the rest lies at or past below
			}
		}
		scan.Close()
	}
	df, err := fw.Close()
	if err != nil {
		return nil, DataFile{}, err
	}
	return buf.Bytes(), df, nil
}

// cutBucket makes a bucket's files end at offset at, where the metadata
// says the lake holds the bucket's records below (an unclean election's
// fence cut lowered it: the log's new history parts from the lake's past
// it): the files wholly at or past it go, the one holding it is written
// again with its rows below it. It returns the files removed and the
// file written (body nil: none).
func (t *Table) cutBucket(ctx context.Context, ix *Index, bk BucketKey, at int64, ls Schema) (removed []string, body []byte, df DataFile, name string, err error) {
	for _, f := range ix.Files(bk) {
		switch {
		case f.Next <= at:
			continue
		case f.From < at:
			if body, df, err = t.compactFiles(ctx, ix, []FileSpan{f}, ls, at); err != nil {
				return nil, nil, DataFile{}, "", err
			}
			if df.RecordCount == 0 {
				body = nil
			}
			name = dataFileName(bk, f.From, at)
		}
		removed = append(removed, f.Key)
	}
	return removed, body, df, name, nil
}

// noBound is compactFiles' below for every row.
const noBound = math.MaxInt64
