package arrowlog

import (
	"bytes"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// FuzzDecode: no payload makes Validate, Rows, Project or a BatchReader
// panic, hang or allocate past the decoder's limit; a payload Validate
// accepts decodes to valid rows, its projections decode to the projected
// rows, and it reads as the record batch of those rows.
func FuzzDecode(f *testing.F) {
	s := allKindsSchema()
	rows := sampleRows(f, s, 20)
	for _, comp := range compressions {
		for _, n := range []int{1, 3, 20} {
			f.Add(encodeRows(f, s, Options{Compression: comp}, rows[:n]), uint16(n))
		}
	}
	d, err := NewDecoderConfig(s, DecoderConfig{MaxBodyBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	columns := []int{21, 14, 9, 17, 7, 0} // nested columns among them
	sub := SubSchema(s, columns)
	subDecoder, err := NewDecoderConfig(sub, DecoderConfig{MaxBodyBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	batches, err := NewBatchReader(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte, count uint16) {
		projected, projectErr := Project(s, payload, columns, nil)
		rec, readErr := batches.Read(payload, int(count))
		if readErr == nil {
			defer rec.Release()
		}
		if err := d.Validate(payload, int(count)); err != nil {
			return
		}
		if readErr != nil {
			t.Fatalf("a BatchReader refuses a payload Validate accepts: %v", readErr)
		}
		var want [][]byte
		err := d.Rows(payload, int(count), func(i int, row []byte) error {
			if err := record.ValidateRow(s, row); err != nil {
				t.Fatalf("record %d of a valid payload is not a valid row: %v", i, err)
			}
			for c, col := range rec.Columns() {
				compareValue(t, s.Columns[c].Type, record.NewRowView(s, row), c, col, i)
			}
			want = append(want, projectRow(t, s, row, columns))
			return nil
		})
		if err != nil {
			t.Fatalf("Rows fails on a payload Validate accepts: %v", err)
		}
		if projectErr != nil {
			t.Fatalf("Project fails on a payload Validate accepts: %v", projectErr)
		}
		var got int
		err = subDecoder.Rows(projected, int(count), func(i int, row []byte) error {
			if !bytes.Equal(row, want[i]) {
				t.Fatalf("projected record %d:\n got %x\nwant %x", i, row, want[i])
			}
			got++
			return nil
		})
		if err != nil || got != int(count) {
			t.Fatalf("projection decodes to %d of %d records: %v", got, count, err)
		}
	})
}

// projectRow re-encodes the columns of row at the given indexes, going
// through an Arrow payload of one record of the full schema.
func projectRow(t *testing.T, s record.Schema, row []byte, columns []int) []byte {
	payload := encodeRows(t, s, Options{}, [][]byte{row})
	projected, err := Project(s, payload, columns, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(SubSchema(s, columns))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	if err := d.Rows(projected, 1, func(_ int, r []byte) error { out = bytes.Clone(r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
