package lake_test

import (
	"crypto/rand"
	"encoding/binary"
	"testing"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering/lake"
)

// BenchmarkFileBuilderAppendBatch: a round's cost per record of writing
// bench produce's rows (an id, a 1 KiB payload: random bytes, the first
// eight the id) from Arrow log batches of 1,000 to a Parquet data file.
func BenchmarkFileBuilderAppendBatch(b *testing.B) {
	s, _ := record.ParseSchema("id BIGINT NOT NULL, payload BYTES")
	ls, err := lake.NewSchema(0, s, nil, new(int))
	if err != nil {
		b.Fatal(err)
	}
	enc, err := arrowlog.NewEncoder(s, arrowlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	_, _ = rand.Read(payload)
	re, err := record.NewRowEncoder(s)
	if err != nil {
		b.Fatal(err)
	}
	const rows = 1000
	for i := range rows {
		binary.BigEndian.PutUint64(payload, uint64(i))
		re.SetInt64(0, int64(i))
		re.SetBytes(1, payload)
		row, err := re.Finish(nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := enc.Append(row); err != nil {
			b.Fatal(err)
		}
	}
	rec, err := enc.Record()
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	b.ReportAllocs()
	b.SetBytes(rows * 1032)
	var fb *lake.FileBuilder
	for i := 0; b.Loop(); i++ {
		if fb == nil {
			if fb, err = lake.NewFileBuilder(s, ls); err != nil {
				b.Fatal(err)
			}
		}
		if err := fb.AppendBatch(rec, 0, int64(i*rows), 1); err != nil {
			b.Fatal(err)
		}
		if fb.Bytes() > 64<<20 {
			if _, _, err := fb.Finish(); err != nil {
				b.Fatal(err)
			}
			fb = nil
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/record")
}
