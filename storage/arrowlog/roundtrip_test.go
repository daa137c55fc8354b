package arrowlog

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/floedb/floe/storage/record"
	"pgregory.net/rapid"
)

var compressions = []record.Compression{record.CompressionNone, record.CompressionZstd, record.CompressionLZ4}

// TestRoundTripProperty: rows → Encoder → Validate → Decoder.Rows gives the
// same rows byte for byte, for every compression, and Project of any
// columns gives what decoding and projecting the rows gives.
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSchema(t)
		n := rapid.IntRange(1, 40).Draw(t, "records")
		enc, err := record.NewRowEncoder(s)
		if err != nil {
			t.Fatal(err)
		}
		values := make([][]setter, n)
		rows := make([][]byte, n)
		for i := range n {
			values[i] = genValues(t, s)
			rows[i] = encodeRow(t, enc, values[i])
		}
		comp := rapid.SampledFrom(compressions).Draw(t, "compression")
		payload := encodeRows(t, s, Options{Compression: comp}, rows)
		checkRows(t, s, payload, rows)

		columns := rapid.Permutation(columnIndexes(len(s.Columns))).Draw(t, "order")
		columns = columns[:rapid.IntRange(1, len(columns)).Draw(t, "projected")]
		projected, err := Project(s, payload, columns, nil)
		if err != nil {
			t.Fatalf("Project %v: %v", columns, err)
		}
		sub := SubSchema(s, columns)
		subEnc, err := record.NewRowEncoder(sub)
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]byte, n)
		for i := range n {
			subValues := make([]setter, len(columns))
			for k, c := range columns {
				subValues[k] = values[i][c]
			}
			want[i] = encodeRow(t, subEnc, subValues)
		}
		checkRows(t, sub, projected, want)
	})
}

func columnIndexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

type testingT interface {
	Helper()
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

func encodeRows(t testingT, s record.Schema, opts Options, rows [][]byte) []byte {
	t.Helper()
	e, err := NewEncoder(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := e.Append(r); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if e.Len() != len(rows) {
		t.Fatalf("Len %d after %d rows", e.Len(), len(rows))
	}
	payload, err := e.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Len() != 0 {
		t.Fatalf("Len %d after Finish", e.Len())
	}
	return payload
}

// checkRows checks that payload validates and decodes to rows.
func checkRows(t testingT, s record.Schema, payload []byte, rows [][]byte) {
	t.Helper()
	d, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(payload, len(rows)); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var got int
	err = d.Rows(payload, len(rows), func(i int, row []byte) error {
		if i != got || !bytes.Equal(row, rows[i]) {
			t.Fatalf("record %d (call %d):\n got %x\nwant %x", i, got, row, rows[i])
		}
		got++
		return nil
	})
	if err != nil || got != len(rows) {
		t.Fatalf("Rows: %d of %d rows, %v", got, len(rows), err)
	}
}

// TestEncoderReuse: batches after the first come out as if from a new
// encoder.
func TestEncoderReuse(t *testing.T) {
	s := allKindsSchema()
	rows := sampleRows(t, s, 50)
	for _, comp := range compressions {
		t.Run(comp.String(), func(t *testing.T) {
			e, err := NewEncoder(s, Options{Compression: comp})
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			for round := range 3 {
				for _, r := range rows[:10*(round+1)] {
					if err := e.Append(r); err != nil {
						t.Fatal(err)
					}
				}
				p, err := e.Finish(nil)
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, s, p, rows[:10*(round+1)])
				if round == 0 {
					first = p
				}
			}
			for _, r := range rows[:10] {
				_ = e.Append(r)
			}
			if p, _ := e.Finish(nil); !bytes.Equal(p, first) {
				t.Fatal("the same rows give another payload on a reused encoder")
			}
		})
	}
}

// allKindsSchema has a column of every kind, NOT NULL and nullable, at
// both storage forms of DECIMAL and timestamps, then nested columns to
// depth 3.
func allKindsSchema() record.Schema {
	types := []record.DataType{
		record.Boolean(), record.TinyInt(), record.SmallInt(), record.Int(), record.BigInt(),
		record.Float(), record.Double(), record.Decimal(12, 2), record.Decimal(38, 10),
		record.String(), record.Bytes(), record.Date(), record.Time(),
		record.Timestamp(3), record.Timestamp(9), record.TimestampLTZ(6), record.TimestampLTZ(7),
		record.Array(record.String(), true),
		record.Map(record.String(), record.BigInt(), true),
		record.Row([]record.Column{
			{Name: "a", Type: record.Int()},
			{Name: "b", Type: record.Array(record.Timestamp(9), false), Nullable: true},
			{Name: "c", Type: record.Decimal(38, 10), Nullable: true},
		}),
		record.Array(record.Array(record.Int(), false), true),
		record.Map(record.Int(), record.Row([]record.Column{
			{Name: "x", Type: record.String(), Nullable: true},
			{Name: "y", Type: record.Map(record.String(), record.Double(), true)},
		}), false),
	}
	var s record.Schema
	for i, typ := range types {
		s.Columns = append(s.Columns, record.Column{Name: "c" + strconv.Itoa(i), Type: typ, Nullable: i%2 == 1})
	}
	return s
}

// sampleRows draws n rows of s from a fixed seed.
func sampleRows(t testing.TB, s record.Schema, n int) [][]byte {
	t.Helper()
	var rows [][]byte
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	gen := rapid.Custom(func(rt *rapid.T) []byte { return encodeRow(rt, enc, genValues(rt, s)) })
	for i := range n {
		rows = append(rows, gen.Example(i))
	}
	return rows
}
