package record

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// Binary schema encoding, version 1. Integers are unsigned varints
// (encoding/binary.AppendUvarint) unless said otherwise.
//
//	version            1 byte, 1
//	column count       uvarint, 1..MaxColumns
//	per column:
//	  name length      uvarint, 1..MaxColumnNameBytes
//	  name             bytes
//	  kind             1 byte, a Kind
//	  precision        1 byte
//	  scale            1 byte
//	  flags            1 byte: bit 0 set = nullable; other bits zero
//	key column count   uvarint, 0..column count
//	per key column:    uvarint, 0-based column index, in key order
//
// Every schema has exactly one encoding: UnmarshalBinary rejects anything
// MarshalBinary would not produce, so equal schemas have equal bytes.
const schemaEncodingVersion = 1

const columnFlagNullable = 1 << 0

// AppendBinary appends the binary encoding of s to b. It fails with an error
// matching ErrInvalidSchema if s does not validate.
func (s Schema) AppendBinary(b []byte) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return b, err
	}
	b = append(b, schemaEncodingVersion)
	b = binary.AppendUvarint(b, uint64(len(s.Columns)))
	for _, c := range s.Columns {
		b = binary.AppendUvarint(b, uint64(len(c.Name)))
		b = append(b, c.Name...)
		var flags byte
		if c.Nullable {
			flags |= columnFlagNullable
		}
		b = append(b, byte(c.Type.kind), byte(c.Type.precision), byte(c.Type.scale), flags)
	}
	b = binary.AppendUvarint(b, uint64(len(s.PrimaryKey)))
	for _, name := range s.PrimaryKey {
		i, _ := s.ColumnIndex(name)
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b, nil
}

// MarshalBinary returns the binary encoding of s (see AppendBinary).
func (s Schema) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(nil)
}

// UnmarshalBinary decodes a schema encoded by MarshalBinary and validates it.
// Errors match ErrInvalidSchema; on error *s is left unchanged.
func (s *Schema) UnmarshalBinary(data []byte) error {
	r := schemaReader{data: data}
	if v := r.byte("version"); v != schemaEncodingVersion {
		if r.err != nil {
			return r.err
		}
		return newSchemaError("unsupported encoding version " + strconv.Itoa(int(v)))
	}
	count := r.uvarint("column count", MaxColumns)
	var out Schema
	for range count {
		if r.err != nil {
			break
		}
		name := r.bytes("column name", r.uvarint("column name length", MaxColumnNameBytes))
		kind, precision, scale := r.byte("column type"), r.byte("column type"), r.byte("column type")
		flags := r.byte("column flags")
		if r.err == nil && flags&^columnFlagNullable != 0 {
			r.err = newSchemaError("encoding: unknown column flags " + strconv.Itoa(int(flags)))
		}
		out.Columns = append(out.Columns, Column{
			Name:     string(name),
			Type:     DataType{kind: Kind(kind), precision: int(precision), scale: int(scale)},
			Nullable: flags&columnFlagNullable != 0,
		})
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
	data []byte
	err  error
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
