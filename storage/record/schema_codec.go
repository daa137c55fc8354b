package record

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
)

// Binary schema encoding. Integers are unsigned varints
// (encoding/binary.AppendUvarint) unless said otherwise.
//
//	version            1 byte: 1, or 2 when a column has a nested type
//	column count       uvarint, 1..MaxColumns
//	per column:        a column, below
//	key column count   uvarint, 0..column count
//	per key column:    uvarint, 0-based column index, in key order
//
// A column is:
//
//	name length        uvarint, 1..MaxColumnNameBytes
//	name               bytes
//	kind               1 byte, a Kind
//	precision          1 byte
//	scale              1 byte
//	children           version 2 and kind ARRAY, MAP or ROW only:
//	  child count      uvarint (1 for ARRAY, 2 for MAP, the fields of a ROW)
//	  per child:       a column (named element, key and value in ARRAY and MAP)
//	flags              1 byte: bit 0 set = nullable; other bits zero
//
// Version 2 adds the children and nothing else, so a schema without nested
// types keeps its version 1 bytes, and every version 1 encoding decodes as
// it always did; builds that know only version 1 refuse version 2 by its
// version byte.
//
// Every schema has exactly one encoding: UnmarshalBinary rejects anything
// MarshalBinary would not produce, so equal schemas have equal bytes.
const (
	schemaEncodingVersion       = 1
	schemaEncodingVersionNested = 2
)

const columnFlagNullable = 1 << 0

// AppendBinary appends the binary encoding of s to b. It fails with an error
// matching ErrInvalidSchema if s does not validate.
func (s Schema) AppendBinary(b []byte) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return b, err
	}
	version := byte(schemaEncodingVersion)
	if slices.ContainsFunc(s.Columns, func(c Column) bool { return c.Type.IsNested() }) {
		version = schemaEncodingVersionNested
	}
	b = append(b, version)
	b = binary.AppendUvarint(b, uint64(len(s.Columns)))
	for _, c := range s.Columns {
		b = appendColumnBinary(b, c)
	}
	b = binary.AppendUvarint(b, uint64(len(s.PrimaryKey)))
	for _, name := range s.PrimaryKey {
		i, _ := s.ColumnIndex(name)
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b, nil
}

// appendColumnBinary appends the encoding of a column of a valid schema.
func appendColumnBinary(b []byte, c Column) []byte {
	b = binary.AppendUvarint(b, uint64(len(c.Name)))
	b = append(b, c.Name...)
	b = append(b, byte(c.Type.kind), byte(c.Type.precision), byte(c.Type.scale))
	if c.Type.IsNested() {
		b = binary.AppendUvarint(b, uint64(len(c.Type.children)))
		for _, child := range c.Type.children {
			b = appendColumnBinary(b, child)
		}
	}
	var flags byte
	if c.Nullable {
		flags |= columnFlagNullable
	}
	return append(b, flags)
}

// MarshalBinary returns the binary encoding of s (see AppendBinary).
func (s Schema) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(nil)
}

// UnmarshalBinary decodes a schema encoded by MarshalBinary and validates it.
// Errors match ErrInvalidSchema; on error *s is left unchanged.
func (s *Schema) UnmarshalBinary(data []byte) error {
	r := schemaReader{data: data}
	v := r.byte("version")
	if v != schemaEncodingVersion && v != schemaEncodingVersionNested {
		if r.err != nil {
			return r.err
		}
		return newSchemaError("unsupported encoding version " + strconv.Itoa(int(v)))
	}
	r.nested = v == schemaEncodingVersionNested
	count := r.uvarint("column count", MaxColumns)
	r.fields = count
	var out Schema
	for range count {
		if r.err != nil {
			break
		}
		out.Columns = append(out.Columns, r.column(1))
	}
	keyCount := r.uvarint("primary key column count", count)
	for range keyCount {
		i := r.uvarint("primary key column index", count-1)
		if r.err != nil {
			break
		}
		out.PrimaryKey = append(out.PrimaryKey, out.Columns[i].Name)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.data) != 0 {
		return newSchemaError("encoding: " + strconv.Itoa(len(r.data)) + " trailing bytes")
	}
	canonical, err := out.AppendBinary(make([]byte, 0, len(data)))
	if err != nil {
		return err
	}
	if !bytes.Equal(canonical, data) {
		return newSchemaError("encoding: not in canonical form")
	}
	*s = out
	return nil
}

// schemaReader reads the binary schema encoding, keeping the first error.
type schemaReader struct {
	data   []byte
	err    error
	nested bool // version 2: nested types have children
	fields int  // columns and nested fields read so far
}

// column reads a column whose type is at the given nesting depth (1 for a
// schema's column). Recursion stops past MaxNestingDepth, and child counts
// past MaxColumns in all or past the bytes left, so hostile bytes neither
// recurse deep nor allocate much.
func (r *schemaReader) column(depth int) Column {
	name := r.bytes("column name", r.uvarint("column name length", MaxColumnNameBytes))
	kind, precision, scale := r.byte("column type"), r.byte("column type"), r.byte("column type")
	t := DataType{kind: Kind(kind), precision: int(precision), scale: int(scale)}
	if r.err == nil && r.nested && t.IsNested() {
		if depth > MaxNestingDepth {
			r.err = newSchemaError("encoding: nesting deeper than " + strconv.Itoa(MaxNestingDepth) + " levels")
			return Column{}
		}
		// A child takes at least 5 bytes: name length, kind, precision, scale, flags.
		n := r.uvarint("child count", min(MaxColumns-r.fields, len(r.data)/5))
		r.fields += n
		t.children = make([]Column, 0, n)
		for range n {
			if r.err != nil {
				break
			}
			t.children = append(t.children, r.column(depth+1))
		}
	}
	flags := r.byte("column flags")
	if r.err == nil && flags&^columnFlagNullable != 0 {
		r.err = newSchemaError("encoding: unknown column flags " + strconv.Itoa(int(flags)))
	}
	return Column{Name: string(name), Type: t, Nullable: flags&columnFlagNullable != 0}
}

func (r *schemaReader) fail(what string) {
	if r.err == nil {
		r.err = newSchemaError("encoding: truncated or malformed " + what)
	}
}

func (r *schemaReader) byte(what string) byte {
	if r.err != nil || len(r.data) == 0 {
		r.fail(what)
		return 0
	}
	c := r.data[0]
	r.data = r.data[1:]
	return c
}

// uvarint reads a uvarint that must not exceed maxValue.
func (r *schemaReader) uvarint(what string, maxValue int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.data)
	if n <= 0 || v > uint64(maxValue) {
		r.fail(what)
		return 0
	}
	r.data = r.data[n:]
	return int(v)
}

func (r *schemaReader) bytes(what string, n int) []byte {
	if r.err != nil || n > len(r.data) {
		r.fail(what)
		return nil
	}
	b := r.data[:n]
	r.data = r.data[n:]
	return b
}

// UnmarshalJSON decodes a schema from the form that encoding/json produces
// from a Schema:
//
//	{"columns": [{"name": "id", "type": "BIGINT", "nullable": false}, ...],
//	 "primary_key": ["id"]}
//
// Types are SQL strings as ParseType reads them. A column without "nullable"
// is NOT NULL. Unknown fields are errors, and the result must validate.
// Errors match ErrInvalidSchema; on error *s is left unchanged.
func (s *Schema) UnmarshalJSON(data []byte) error {
	type plainSchema Schema // without methods, so decoding does not recurse
	var p plainSchema
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, ErrInvalidSchema) {
			return err
		}
		return &detailError{pkg: "record", msg: "schema: JSON: " + err.Error(), kinds: []error{ErrInvalidSchema, err}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return newSchemaError("JSON: trailing data after the schema object")
	}
	out := Schema(p)
	if err := out.Validate(); err != nil {
		return err
	}
	*s = out
	return nil
}
