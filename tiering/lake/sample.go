package lake

import (
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/zstd"
)

// A file's first rows decide two of each column's encodings (their
// values are what the log's writers send, batch after batch):
//
//   - distinct: most of sampleValues values differ. A dictionary hashes
//     every value until it outgrows its page limit (1 MiB) and falls back
//     to plain; for mostly distinct values that is pure cost (a round's
//     third on bench produce's ids).
//   - incompressible: zstd's fastest level keeps more than
//     incompressibleRatio of up to sampleBytes of the values (random or
//     already compressed bytes); compressing every page of them is pure
//     cost.
//
// Too few rows (under minSampleValues) keep the defaults. Nested columns
// keep them too: their leaves are not top-level Parquet columns.
const (
	sampleValues        = 1024
	minSampleValues     = 64
	sampleBytes         = 64 << 10
	incompressibleRatio = 0.9
)

// sampleEncoder compresses samples; EncodeAll is safe for concurrent use.
var sampleEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
	zstd.WithEncoderCRC(false))

// sampleColumn judges a column by its first values.
func sampleColumn(col arrow.Array) (distinct, incompressible bool) {
	n := min(col.Len(), sampleValues)
	if n < minSampleValues {
		return false, false
	}
	var (
		seed   = maphash.MakeSeed()
		keys   = make(map[uint64]struct{}, n) // by hash: a collision is rare and only undercounts
		values []byte
		nonNil int
	)
	add := func(v []byte) {
		nonNil++
		keys[maphash.Bytes(seed, v)] = struct{}{}
		if len(values) < sampleBytes {
			values = append(values, v...)
		}
	}
	switch a := col.(type) {
	case *array.Binary:
		for i := range n {
			if a.IsValid(i) {
				add(a.Value(i))
			}
		}
	case *array.String:
		for i := range n {
			if a.IsValid(i) {
				add([]byte(a.Value(i)))
			}
		}
	default:
		fw, ok := col.DataType().(arrow.FixedWidthDataType)
		if !ok || fw.BitWidth() < 8 || len(col.Data().Buffers()) < 2 || col.Data().Buffers()[1] == nil {
			return false, false // booleans, nested columns
		}
		width := fw.BitWidth() / 8
		raw := col.Data().Buffers()[1].Bytes()[col.Data().Offset()*width:]
		for i := range n {
			if col.IsValid(i) {
				add(raw[i*width : (i+1)*width])
			}
		}
	}
	if nonNil < minSampleValues {
		return false, false
	}
	distinct = len(keys) > nonNil/2
	compressed := sampleEncoder.EncodeAll(values, nil)
	incompressible = float64(len(compressed)) > incompressibleRatio*float64(len(values))
	return distinct, incompressible
}
