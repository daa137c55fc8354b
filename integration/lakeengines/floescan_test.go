package lakeengines

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"testing"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering/lake"
)

// floeScanRows is the rows a Floe scan reads from a file, and cuts into
// chunks, at a time: small, so that a file takes several of each.
const floeScanRows = 2

// index is the lake index of the table's committed version.
func (w *lakeWriter) index() *lake.Index {
	t := w.t
	t.Helper()
	ix, err := w.tbl.ReadIndex(t.Context(), w.key, nil)
	if err != nil {
		t.Fatalf("Floe reads the index of version %d: %v", w.version, err)
	}
	return ix
}

// scanWithFloe reads every bucket of the table's committed version back
// as a leader serves a consumer's fetch below its log from the lake
// (server/replica's serveLake): each file of the index from the bucket's
// first offset on, opened with OpenScan for the current schema's columns,
// written as log batches by BatchWriter and decoded as a client decodes
// them. Each row is its columns' values as JSON text has them, with its
// record's offset as __offset.
func (w *lakeWriter) scanWithFloe() readRows {
	t := w.t
	t.Helper()
	ix := w.index()
	schema, id := w.schemas[w.current], int16(w.current)
	// A column reads the lake field at its position when their names
	// agree, the rule serveLake reads a column by; else it reads as null.
	fields := make([]int, len(schema.Columns))
	for c := range schema.Columns {
		if c < len(ix.Schema.Fields) && ix.Schema.Fields[c].Name == schema.Columns[c].Name {
			fields[c] = ix.Schema.Fields[c].ID
		}
	}
	bw, err := lake.NewBatchWriter(schema, id, false)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := arrowlog.NewDecoder(schema)
	if err != nil {
		t.Fatal(err)
	}
	var out readRows
	readFile := func(span lake.FileSpan, from int64) {
		t.Helper()
		ctx := t.Context()
		scan, err := w.tbl.OpenScan(ctx, span, ix.Schema, bw.ScanColumns(fields), from, floeScanRows)
		if err != nil {
			t.Fatalf("Floe opens %s: %v", span.Key, err)
		}
		defer scan.Close()
		for {
			c, err := scan.Next(ctx, floeScanRows)
			if err == io.EOF {
				return
			} else if err != nil {
				t.Fatalf("Floe scans %s: %v", span.Key, err)
			}
			rows := c.Rows()
			data, n, err := bw.Append(nil, c, 0, math.MaxInt)
			c.Release()
			if err != nil || n != rows {
				t.Fatalf("Floe writes %d rows of %s as batches: %d written, %v", rows, span.Key, n, err)
			}
			for it := record.NewBatchIterator(data, true); it.Next(); {
				batch := it.Batch()
				err := dec.Rows(batch.Payload(), int(batch.RecordCount()), func(i int, row []byte) error {
					js, err := record.AppendRowJSON(nil, schema, row)
					if err != nil {
						return err
					}
					r := jsonValues(t, js)
					r[lake.OffsetColumn] = strconv.FormatInt(batch.BaseOffset()+int64(i), 10)
					out = append(out, r)
					return nil
				})
				if err != nil {
					t.Fatalf("decoding a batch Floe made of %s: %v", span.Key, err)
				}
			}
		}
	}
	for _, ref := range w.bucketRefs() {
		b := bucketKey(ref)
		from, ok := ix.Start(b)
		if !ok && w.primaryKey() {
			continue // every key of the bucket deleted: no file holds its rows
		} else if !ok {
			t.Fatalf("the lake holds none of bucket %d of %d's records", b.Bucket, b.PhysicalID)
		}
		for {
			span, err := ix.Find(b, from)
			if errors.Is(err, lake.ErrNotInLake) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			readFile(span, from)
			from = span.Next
		}
	}
	return out
}

// jsonValues reads a row's JSON object (of scalar columns) as readRows
// has it: strings as they are, numbers as written, null as "(null)".
func jsonValues(t *testing.T, js []byte) map[string]string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("row %s: %v", js, err)
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		switch x := v.(type) {
		case nil:
			out[k] = null
		case string:
			out[k] = x
		case json.Number:
			out[k] = x.String()
		default:
			t.Fatalf("row %s: column %s is not a scalar", js, k)
		}
	}
	return out
}
