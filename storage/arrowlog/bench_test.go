package arrowlog

import (
	"fmt"
	"testing"

	"github.com/floedb/floe/storage/arrowlog/clickstream"
	"github.com/floedb/floe/storage/record"
)

// benchBatchRecords is the records per batch of the benchmarks: a produce
// batch of a busy writer.
const benchBatchRecords = 2000

func clickstreamRows(n int) [][]byte {
	g := clickstream.New(1)
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = g.Row(nil)
	}
	return rows
}

var benchOptions = []struct {
	name string
	opts Options
}{
	{"none", Options{}},
	{"lz4", Options{Compression: record.CompressionLZ4}},
	{"zstd-3", Options{Compression: record.CompressionZstd, Level: 3}},
	{"zstd-9", Options{Compression: record.CompressionZstd, Level: 9}},
}

// BenchmarkPayloadBytes reports bytes per record of a clickstream batch in
// the row format (uncompressed, and zstd with record's codec) and as Arrow
// payloads (none, lz4, zstd-3), payload bytes only.
func BenchmarkPayloadBytes(b *testing.B) {
	rows := clickstreamRows(benchBatchRecords)
	codec, err := record.NewCodec(record.CodecConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer codec.Close()
	for _, comp := range []record.Compression{record.CompressionNone, record.CompressionZstd} {
		b.Run("rows-"+comp.String(), func(b *testing.B) {
			bld := record.NewBatchBuilder(record.BatchOptions{}, 0)
			var size int
			for b.Loop() {
				bld.Reset(record.BatchOptions{Format: record.PayloadRows, Compression: comp, Codec: codec}, 0)
				for _, r := range rows {
					if err := bld.Append(record.AppendOnly, r); err != nil {
						b.Fatal(err)
					}
				}
				batch, err := bld.Build()
				if err != nil {
					b.Fatal(err)
				}
				size = len(batch.Payload())
			}
			b.ReportMetric(float64(size)/benchBatchRecords, "bytes/record")
			b.ReportMetric(float64(b.N*benchBatchRecords)/b.Elapsed().Seconds(), "records/s")
		})
	}
	for _, o := range benchOptions {
		b.Run("arrow-"+o.name, func(b *testing.B) {
			e, err := NewEncoder(clickstream.Schema(), o.opts)
			if err != nil {
				b.Fatal(err)
			}
			payload := encodeBatch(b, e, rows, nil)
			b.ReportMetric(float64(len(payload))/benchBatchRecords, "bytes/record")
		})
	}
}

func encodeBatch(b testing.TB, e *Encoder, rows [][]byte, dst []byte) []byte {
	for _, r := range rows {
		if err := e.Append(r); err != nil {
			b.Fatal(err)
		}
	}
	dst, err := e.Finish(dst[:0])
	if err != nil {
		b.Fatal(err)
	}
	return dst
}

// BenchmarkEncode: rows to an Arrow payload, one encoder reused across
// batches.
func BenchmarkEncode(b *testing.B) {
	rows := clickstreamRows(benchBatchRecords)
	for _, o := range benchOptions {
		b.Run(o.name, func(b *testing.B) {
			e, err := NewEncoder(clickstream.Schema(), o.opts)
			if err != nil {
				b.Fatal(err)
			}
			dst := encodeBatch(b, e, rows, nil)
			b.ReportAllocs()
			for b.Loop() {
				dst = encodeBatch(b, e, rows, dst)
			}
			b.ReportMetric(float64(b.N*benchBatchRecords)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(len(dst))/benchBatchRecords, "bytes/record")
		})
	}
}

// BenchmarkDecode: an Arrow payload back to rows (Rows, which validates
// as it goes).
func BenchmarkDecode(b *testing.B) {
	rows := clickstreamRows(benchBatchRecords)
	for _, o := range benchOptions {
		b.Run(o.name, func(b *testing.B) {
			e, err := NewEncoder(clickstream.Schema(), o.opts)
			if err != nil {
				b.Fatal(err)
			}
			payload := encodeBatch(b, e, rows, nil)
			d, err := NewDecoder(clickstream.Schema())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Rows(payload, benchBatchRecords, func(int, []byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchBatchRecords)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkProject: 2 of the 20 columns (user id and event time) cut out
// of a payload without decompressing; bytes-ratio is the projected
// payload's size over the full one's.
func BenchmarkProject(b *testing.B) {
	rows := clickstreamRows(benchBatchRecords)
	columns := []int{clickstream.UserID, clickstream.EventTime}
	for _, o := range benchOptions {
		b.Run(o.name, func(b *testing.B) {
			e, err := NewEncoder(clickstream.Schema(), o.opts)
			if err != nil {
				b.Fatal(err)
			}
			payload := encodeBatch(b, e, rows, nil)
			var out []byte
			b.ReportAllocs()
			for b.Loop() {
				if out, err = Project(clickstream.Schema(), payload, columns, out[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out))/float64(len(payload)), "bytes-ratio")
			b.ReportMetric(float64(len(out))/benchBatchRecords, "bytes/record")
		})
	}
}

// BenchmarkEncodeSmallBatches: what a batch costs beside its rows, the
// writer's side of rows spread over many partitions: the same rows in
// batches of 8, 32 and 256.
func BenchmarkEncodeSmallBatches(b *testing.B) {
	for _, n := range []int{8, 32, 256} {
		rows := clickstreamRows(n)
		for _, o := range benchOptions {
			b.Run(fmt.Sprintf("%s/rows=%d", o.name, n), func(b *testing.B) {
				e, err := NewEncoder(clickstream.Schema(), o.opts)
				if err != nil {
					b.Fatal(err)
				}
				dst := encodeBatch(b, e, rows, nil)
				b.ReportAllocs()
				for b.Loop() {
					dst = encodeBatch(b, e, rows, dst)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
		}
	}
}
