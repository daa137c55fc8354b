package arrowlog

import (
	"errors"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// oneColumn is a schema of one nullable column of type typ.
func oneColumn(typ record.DataType) record.Schema {
	return record.Schema{Columns: []record.Column{{Name: "n", Type: typ, Nullable: true}}}
}

// entries is ARRAY<ROW<key K, value INT>>: the Arrow layout of MAP<K, INT>
// (a list of structs), without its rules.
func entries(keyNullable, elemNullable bool) record.DataType {
	return record.Array(record.Row([]record.Column{
		{Name: "key", Type: record.String(), Nullable: keyNullable},
		{Name: "value", Type: record.Int(), Nullable: true},
	}), elemNullable)
}

// entriesValue encodes an entries value of the given keys (nil: a null key;
// a nil slice element with nullEntry: a null entry).
func entriesValue(t *testing.T, typ record.DataType, keys []*string, nullEntry bool) []byte {
	t.Helper()
	a, err := record.NewArrayEncoder(typ.Elem().Type, typ.Elem().Nullable)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := record.NewRowValueEncoder(typ.Elem().Type.Fields())
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		switch {
		case k == nil && nullEntry:
			a.AppendNull()
			continue
		case k == nil:
			entry.SetNull(0)
		default:
			entry.SetString(0, *k)
		}
		entry.SetInt64(1, int64(i))
		v, err := entry.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		a.AppendNested(v)
	}
	v, err := a.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// nestedPayload is the payload of one row of s whose column is value.
func nestedPayload(t *testing.T, s record.Schema, value []byte) []byte {
	t.Helper()
	e, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	e.SetNested(0, value)
	row, err := e.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return encodeRows(t, s, Options{}, [][]byte{row})
}

// TestValidateRefusesNested: nested values are checked as
// record.ValidateRow checks them, whatever the payload's buffers say.
func TestValidateRefusesNested(t *testing.T) {
	a, b := "a", "b"
	mapSchema := oneColumn(record.Map(record.String(), record.Int(), true))
	loose := oneColumn(entries(true, true))
	strictElems := oneColumn(record.Array(record.Row(entries(false, false).Elem().Type.Fields()), false))
	looseRow := oneColumn(record.Row([]record.Column{{Name: "city", Type: record.String(), Nullable: true}}))
	strictRow := oneColumn(record.Row([]record.Column{{Name: "city", Type: record.String()}}))
	nullCity, _ := record.NewRowValueEncoder(looseRow.Columns[0].Type.Fields())
	nullCity.SetNull(0)
	nullCityValue, _ := nullCity.Finish(nil)
	good := nestedPayload(t, loose, entriesValue(t, loose.Columns[0].Type, []*string{&a, &b}, false))

	tests := []struct {
		name    string
		schema  record.Schema
		payload []byte
		is      error
		says    string
	}{
		{"duplicate map key", mapSchema, nestedPayload(t, loose, entriesValue(t, loose.Columns[0].Type, []*string{&a, &b, &a}, false)),
			record.ErrInvalidValue, "duplicate key"},
		{"null map key", mapSchema, nestedPayload(t, loose, entriesValue(t, loose.Columns[0].Type, []*string{&a, nil}, false)),
			record.ErrNullNotAllowed, "record 0"},
		{"null map entry", mapSchema, nestedPayload(t, loose, entriesValue(t, loose.Columns[0].Type, []*string{&a, nil}, true)),
			ErrInvalidPayload, "null map entries"},
		{"null in NOT NULL elements", strictElems, nestedPayload(t, loose, entriesValue(t, loose.Columns[0].Type, []*string{&a, nil}, true)),
			record.ErrNullNotAllowed, "record 0"},
		{"null in a NOT NULL field", strictRow, nestedPayload(t, looseRow, nullCityValue), record.ErrNullNotAllowed, "record 0"},
		{"offsets past the child", mapSchema, rewrite(t, good, func(m *batchMeta, body []byte) []byte {
			body[m.buffers[1].offset+4] = 3 // the list's end offset: 3 entries of 2
			return body
		}), ErrInvalidPayload, "2 values where its parent refers to 3"},
		{"offsets decrease", mapSchema, rewrite(t, good, func(m *batchMeta, body []byte) []byte {
			body[m.buffers[1].offset] = 3 // start after the end (2)
			return body
		}), ErrInvalidPayload, "before the previous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoder(tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			err = d.Validate(tt.payload, 1)
			if !errors.Is(err, tt.is) || !errors.Is(err, ErrInvalidPayload) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Validate: %v\nwant an error matching %v that says %q", err, tt.is, tt.says)
			}
			// The decoder is left ready for the next payload.
			if err := d.Validate(tt.payload, 1); !errors.Is(err, tt.is) {
				t.Fatalf("Validate again: %v", err)
			}
		})
	}
	if d, _ := NewDecoder(mapSchema); d.Validate(good, 1) != nil {
		t.Fatalf("a list of distinct key-value structs does not read as a map: %v", d.Validate(good, 1))
	}
}

// TestNestedTimestampOutsideNanos: Append refuses a nested timestamp that
// int64 nanoseconds cannot hold, naming where it is, and keeps the batch.
func TestNestedTimestampOutsideNanos(t *testing.T) {
	s := record.Schema{Columns: []record.Column{{Name: "at", Type: record.Array(record.TimestampLTZ(9), false)}}}
	a, _ := record.NewArrayEncoder(record.TimestampLTZ(9), false)
	a.AppendTimestamp(0, 0)
	a.AppendTimestamp(-62167219200000, 0) // 0000-01-01
	v, err := a.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEncoder(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	row, _ := record.NewRowEncoder(s)
	row.SetNested(0, v)
	r, err := row.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	var rangeErr *TimestampRangeError
	if err := e.Append(r); !errors.As(err, &rangeErr) || rangeErr.Column != "at.element" {
		t.Fatalf("Append: %v, want a *TimestampRangeError about at.element", err)
	}
	if e.Len() != 0 || e.SizeEstimate() != emptySize(t, s) {
		t.Fatalf("a refused row left %d rows, %d bytes", e.Len(), e.SizeEstimate())
	}
}
