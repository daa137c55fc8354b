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
// bench produce's rows (a new id each, a 1 KiB payload) from zstd Arrow
// log payloads of 1,000 records, read as a round reads them
// (arrowlog.BatchReader), to Parquet data files of 64 MiB of rows. bench
// produce repeats one payload; "distinct" makes each one its own (its
// first eight bytes the id).
func BenchmarkFileBuilderAppendBatch(b *testing.B) {
	for _, bc := range []struct {
		name     string
		distinct bool
	}{{"repeated", false}, {"distinct", true}} {
		b.Run(bc.name, func(b *testing.B) { benchmarkAppendBatch(b, bc.distinct) })
	}
}

func benchmarkAppendBatch(b *testing.B, distinct bool) {
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
	// A file's worth of batches, each of its own ids.
	const rows, batches = 1000, 64
	logPayloads := make([][]byte, batches)
	for p := range logPayloads {
		for i := range rows {
			id := p*rows + i
			if distinct {
				binary.BigEndian.PutUint64(payload, uint64(id))
			}
			re.SetInt64(0, int64(id))
			re.SetBytes(1, payload)
			row, err := re.Finish(nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := enc.Append(row); err != nil {
				b.Fatal(err)
			}
		}
		if logPayloads[p], err = enc.Finish(nil); err != nil {
			b.Fatal(err)
		}
	}
	rd, err := arrowlog.NewBatchReader(s)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(rows * 1032)
	var fb *lake.FileBuilder
	for i := 0; b.Loop(); i++ {
		if fb == nil {
			if fb, err = lake.NewFileBuilder(s, ls); err != nil {
				b.Fatal(err)
			}
		}
		rec, err := rd.Read(logPayloads[i%batches], rows)
		if err != nil {
			b.Fatal(err)
		}
		err = fb.AppendBatch(rec, 0, int64(i*rows), 1)
		rec.Release()
		if err != nil {
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
