package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// JSONCodec converts between rows of one schema and JSON objects, one object
// per row, with the column names as keys.
//
// From JSON to row (AppendRow) the rules are strict:
//
//   - a key that is not a column is an error (ErrUnknownColumn), as is a key
//     given twice (ErrDuplicateColumn);
//   - a missing key or null makes a nullable column null; for a NOT NULL
//     column either is an error (ErrNullNotAllowed);
//   - a JSON value of the wrong type is an error (ErrWrongType);
//   - values out of range are errors (ErrOverflow), never rounded or
//     truncated: integers past their type's range, DECIMAL values with more
//     digits than the precision or more fractional digits than the scale,
//     timestamps with more fractional digits than the precision;
//   - text that does not parse as its type is an error (ErrInvalidValue), and
//     so is invalid UTF-8 anywhere in a STRING value, including unpaired
//     surrogate escapes (ErrInvalidUTF8).
//
// Values by column type, as read and [as written]:
//
//	BOOLEAN                   true or false
//	TINYINT ... BIGINT        a number with an integral value: 7, -7, 7.0, 7e2 [7]
//	FLOAT, DOUBLE             a number, or "NaN", "Infinity", "-Infinity" [shortest round-trip form]
//	DECIMAL(p,s)              a number or a string holding one: 12.5, "12.5", "1.25e1" [12.50, a number with s decimals]
//	STRING                    a string
//	BYTES                     a string of standard padded base64
//	DATE                      "2006-01-02"
//	TIME                      "15:04:05" with up to 3 fractional digits (more if zero) ["15:04:05" or "15:04:05.123"]
//	TIMESTAMP(p)              "2006-01-02T15:04:05.999999999", T or space, no zone ["2006-01-02T15:04:05" and p digits]
//	TIMESTAMP_LTZ(p)          RFC 3339 with "Z" or "±07:00", or epoch milliseconds as an integer ["2006-01-02T15:04:05Z" with p digits, in UTC]
//	ARRAY<T>                  an array of the elements
//	ROW<name T, ...>          an object of the fields, by the rules of a row's object
//	MAP<STRING, V>            an object {"k": v, ...}, entries in order
//	MAP<K, V>, K not STRING   an array of entries [{"key": k, "value": v}, ...] (a missing "value" is null)
//
// Errors about a value inside a nested one say where it is with
// ColumnError.Path, as in `column "tags"[3]: expected JSON string for
// STRING, got number`.
//
// Writing (AppendJSON) produces keys in column order and values that AppendRow
// reads back into the same row bytes.
//
// Errors about a value are *ColumnError values; syntax errors match
// ErrInvalidJSON. A JSONCodec is not safe for concurrent use.
type JSONCodec struct {
	schema  Schema
	index   map[string]int
	enc     *RowEncoder
	seen    []bool
	reader  bytes.Reader
	raw     json.RawMessage // the current value
	text    []byte          // unescaped string values
	decoded []byte          // base64-decoded BYTES values
}

// NewJSONCodec returns a codec for rows of s, which must validate.
func NewJSONCodec(s Schema) (*JSONCodec, error) {
	enc, err := NewRowEncoder(s)
	if err != nil {
		return nil, err
	}
	c := &JSONCodec{
		schema: Schema{Columns: enc.columns, PrimaryKey: slices.Clone(s.PrimaryKey)},
		index:  make(map[string]int, len(enc.columns)),
		enc:    enc,
		seen:   make([]bool, len(enc.columns)),
	}
	for i, col := range enc.columns {
		c.index[col.Name] = i
	}
	return c, nil
}

// AppendRowFromJSON converts one JSON object to a row of s and appends it to
// dst, as JSONCodec.AppendRow does. Use a JSONCodec to convert many.
func AppendRowFromJSON(dst []byte, s Schema, object []byte) ([]byte, error) {
	c, err := NewJSONCodec(s)
	if err != nil {
		return dst, err
	}
	return c.AppendRow(dst, object)
}

// AppendRowJSON validates row as a row of s, which must be a valid schema,
// and appends it to dst as a JSON object, as JSONCodec.AppendJSON does.
func AppendRowJSON(dst []byte, s Schema, row []byte) ([]byte, error) {
	if err := ValidateRow(s, row); err != nil {
		return dst, err
	}
	return appendRowJSON(dst, NewRowView(s, row)), nil
}

// AppendRow converts the JSON object to a row and appends the row to dst.
// The input must hold exactly one object, with optional white space around
// it. On error dst is returned unchanged.
func (c *JSONCodec) AppendRow(dst, object []byte) ([]byte, error) {
	c.enc.Reset()
	clear(c.seen)
	if err := c.setFields(object); err != nil {
		c.enc.Reset()
		return dst, err
	}
	return c.enc.Finish(dst)
}

// AppendJSON validates row and appends it to dst as a JSON object. On error
// dst is returned unchanged.
func (c *JSONCodec) AppendJSON(dst, row []byte) ([]byte, error) {
	return AppendRowJSON(dst, c.schema, row)
}

// setFields reads the object and sets the encoder's fields.
func (c *JSONCodec) setFields(object []byte) error {
	c.reader.Reset(object)
	dec := json.NewDecoder(&c.reader)
	tok, err := dec.Token()
	if err != nil {
		return jsonSyntaxError(err, object)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &detailError{pkg: "record", msg: "invalid JSON row: not a JSON object", kinds: []error{ErrInvalidJSON}}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonSyntaxError(err, object)
		}
		key, ok := tok.(string)
		if !ok { // the decoder only returns strings for keys; be defensive
			return &detailError{pkg: "record", msg: "invalid JSON row: object key is not a string", kinds: []error{ErrInvalidJSON}}
		}
		i, ok := c.index[key]
		if !ok {
			return newColumnError(key, "not in the schema", ErrUnknownColumn)
		}
		if c.seen[i] {
			return newColumnError(key, "given twice", ErrDuplicateColumn)
		}
		c.seen[i] = true
		if err := dec.Decode(&c.raw); err != nil {
			return jsonSyntaxError(err, object)
		}
		if err := c.setField(i, trimJSONSpace(c.raw)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return jsonSyntaxError(err, object)
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonSyntaxError(err, object)
	}
	return nil
}

// jsonSyntaxError describes malformed JSON with the column (1-based byte
// position in the object's text) where it goes wrong. The streaming
// decoder's offsets are relative to the token it was reading, so the text
// is scanned again whole, which only a malformed row pays for.
func jsonSyntaxError(err error, object []byte) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	var raw json.RawMessage
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(object, &raw), &se) {
		col, what := max(se.Offset, 1), se.Error()
		switch {
		case strings.HasSuffix(what, "after top-level value"):
			what = "data after the object"
		case what == "unexpected end of JSON input":
			col, what = int64(len(bytes.TrimRight(object, " \t\r\n")))+1, "the object is cut short"
		}
		return &detailError{pkg: "record", msg: fmt.Sprintf("invalid JSON row at column %d: %s", col, what),
			kinds: []error{ErrInvalidJSON, se}}
	}
	return &detailError{pkg: "record", msg: "invalid JSON row: " + err.Error(), kinds: []error{ErrInvalidJSON, err}}
}

func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// appendRowJSON appends the row of a validated view (a row or a ROW value)
// as a JSON object.
func appendRowJSON(dst []byte, v RowView) []byte {
	dst = append(dst, '{')
	for i := range v.length {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, v.columns[i].Name)
		dst = append(dst, ':')
		dst = appendValueJSON(dst, v, i)
	}
	return append(dst, '}')
}
