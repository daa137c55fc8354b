package arrowlog

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/floedb/floe/storage/record"
)

// TestArrowReaderReadsPayloads: Arrow's own IPC reader, given the schema
// message ArrowSchema makes, reads payloads, so engines that read Arrow
// read them.
func TestArrowReaderReadsPayloads(t *testing.T) {
	s := allKindsSchema()
	rows := sampleRows(t, s, 100)
	schema, err := ArrowSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range compressions {
		t.Run(comp.String(), func(t *testing.T) {
			payload := encodeRows(t, s, Options{Compression: comp}, rows)
			var stream bytes.Buffer
			w := ipc.NewWriter(&stream, ipc.WithSchema(schema))
			if err := w.Close(); err != nil { // the schema message, then end of stream
				t.Fatal(err)
			}
			eos := stream.Bytes()[stream.Len()-8:]
			data := append(append(bytes.Clone(stream.Bytes()[:stream.Len()-8]), payload...), eos...)
			r, err := ipc.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			if !r.Next() {
				t.Fatalf("no record batch: %v", r.Err())
			}
			rec := r.RecordBatch()
			if int(rec.NumRows()) != len(rows) || !rec.Schema().Equal(schema) {
				t.Fatalf("%d rows of %v", rec.NumRows(), rec.Schema())
			}
			for c, col := range rec.Columns() {
				for i, row := range rows {
					compareValue(t, s.Columns[c].Type, record.NewRowView(s, row), c, col, i)
				}
			}
		})
	}
}

// compareValue checks value i of an Arrow array against value vi of v, of
// type typ, and the values nested in them.
func compareValue[V valueSource](t *testing.T, typ record.DataType, v V, vi int, col arrow.Array, i int) {
	t.Helper()
	if v.IsNull(vi) != col.IsNull(i) {
		t.Fatalf("%v value %d: null %v, Arrow says %v", typ, vi, v.IsNull(vi), col.IsNull(i))
	}
	if v.IsNull(vi) {
		return
	}
	var same bool
	switch a := col.(type) {
	case *array.Boolean:
		same = a.Value(i) == v.Bool(vi)
	case *array.Int8:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Int16:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Int32:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Int64:
		same = a.Value(i) == v.Int64(vi)
	case *array.Float32:
		same = a.Value(i) == v.Float32(vi) || math.IsNaN(float64(a.Value(i))) && math.IsNaN(float64(v.Float32(vi)))
	case *array.Float64:
		same = a.Value(i) == v.Float64(vi) || math.IsNaN(a.Value(i)) && math.IsNaN(v.Float64(vi))
	case *array.Decimal128:
		same = a.Value(i).BigInt().Cmp(bigOfTwos(v.AppendDecimalBytes(nil, vi))) == 0
	case *array.String:
		same = a.Value(i) == string(v.Bytes(vi))
	case *array.Binary:
		same = bytes.Equal(a.Value(i), v.Bytes(vi))
	case *array.Date32:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Time32:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Timestamp:
		millis, nanos := v.Timestamp(vi)
		unit := a.DataType().(*arrow.TimestampType).Unit
		got := a.Value(i).ToTime(unit)
		same = got.UnixMilli() == millis && int32(got.Nanosecond()%1_000_000) == nanos
	case *array.Map: // before List, which it embeds
		m := v.Map(vi)
		start, end := a.ValueOffsets(i)
		if same = int(end-start) == m.Len(); same {
			for j := range m.Len() {
				compareValue(t, typ.MapKey().Type, m.Keys(), j, a.Keys(), int(start)+j)
				compareValue(t, typ.MapValue().Type, m.Values(), j, a.Items(), int(start)+j)
			}
		}
	case *array.List:
		elems := v.Array(vi)
		start, end := a.ValueOffsets(i)
		if same = int(end-start) == elems.Len(); same {
			for j := range elems.Len() {
				compareValue(t, typ.Elem().Type, elems, j, a.ListValues(), int(start)+j)
			}
		}
	case *array.Struct:
		fields := v.Row(vi)
		for f, field := range typ.Fields() {
			compareValue(t, field.Type, fields, f, a.Field(f), i)
		}
		same = true
	default:
		t.Fatalf("%v: unexpected Arrow array %T", typ, col)
	}
	if !same {
		t.Fatalf("%v value %d: Arrow reads %v", typ, vi, col.ValueStr(i))
	}
}

// bigOfTwos is the value of big-endian two's complement bytes.
func bigOfTwos(twos []byte) *big.Int {
	v := new(big.Int).SetBytes(twos)
	if len(twos) > 0 && twos[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(twos))))
	}
	return v
}

// TestZstdPayloadLayout: a zstd payload says ZSTD by BUFFER in its
// metadata, compresses the buffers that shrink (a repetitive string
// column) and stores as they are, prefixed -1, those that would not (random
// bytes), at aligned offsets, and decodes to its rows.
func TestZstdPayloadLayout(t *testing.T) {
	s, err := record.ParseSchema("id BIGINT NOT NULL, name STRING NOT NULL, noise BYTES NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var rows [][]byte
	for i := range 200 {
		enc.Reset()
		enc.SetInt64(0, int64(i))
		enc.SetString(1, "the same name, again and again")
		noise := make([]byte, 64)
		for j := range noise {
			noise[j] = byte(rnd.Uint32())
		}
		enc.SetBytes(2, noise)
		row, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	plain := encodeRows(t, s, Options{}, rows)
	payload := encodeRows(t, s, Options{Compression: record.CompressionZstd}, rows)
	var meta batchMeta
	body, err := parseMessage(payload, &meta)
	if err != nil {
		t.Fatal(err)
	}
	if !meta.compressed || meta.codec != codecZstd {
		t.Fatalf("metadata: compressed %v codec %d, want ZSTD", meta.compressed, meta.codec)
	}
	var squeezed, raw int
	for i, ref := range meta.buffers {
		if ref.offset%alignment != 0 {
			t.Fatalf("buffer %d at unaligned offset %d", i, ref.offset)
		}
		if ref.length == 0 {
			continue
		}
		switch prefix := int64(binary.LittleEndian.Uint64(body[ref.offset:])); {
		case prefix == notCompressed:
			raw++
		case prefix > ref.length-uncompressedPrefixBytes:
			squeezed++
		default:
			t.Fatalf("buffer %d: %d bytes holding %d compressed: no saving, it should be stored as it is", i, ref.length, prefix)
		}
	}
	if squeezed == 0 || raw == 0 {
		t.Fatalf("%d buffers compressed, %d stored as they are; want some of each", squeezed, raw)
	}
	if len(payload) >= len(plain) {
		t.Fatalf("zstd payload of %d bytes, uncompressed %d", len(payload), len(plain))
	}
	d, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	if err := d.Rows(payload, len(rows), func(_ int, row []byte) error {
		got = append(got, bytes.Clone(row))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows back, want %d", len(got), len(rows))
	}
	for i := range rows {
		if !bytes.Equal(got[i], rows[i]) {
			t.Fatalf("row %d differs after the round trip", i)
		}
	}
}
