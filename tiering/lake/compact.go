package lake

import (
	"bytes"
	"context"
	"io"

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
	// compactSmallBytes: a data file under it is small.
	compactSmallBytes = 16 << 20
	// compactMinFiles: a run of small files is merged once it has this
	// many.
	compactMinFiles = 8
	// compactMaxBytes bounds the files one merge reads.
	compactMaxBytes = DefaultRoundBytes
)

// smallRun returns the first run of at least minFiles consecutive files of
// a bucket (spans, in offset order) under small bytes each, at most
// maxBytes in all; nil when there is none.
func smallRun(spans []FileSpan, small, maxBytes int64, minFiles int) []FileSpan {
	for i := 0; i < len(spans); {
		j, total := i, int64(0)
		for j < len(spans) && spans[j].Size < small && total+spans[j].Size <= maxBytes {
			total += spans[j].Size
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
// rows in order, every column (system ones too) copied as it is, a column
// a file lacks null.
func (t *Table) compactFiles(ctx context.Context, ix *Index, spans []FileSpan, ls Schema) ([]byte, DataFile, error) {
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
			rec := array.NewRecordBatch(as, c.Columns, int64(c.Rows()))
			err = fw.Write(rec)
			rec.Release()
			c.Release()
			if err != nil {
				scan.Close()
				return nil, DataFile{}, err
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
