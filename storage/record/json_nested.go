package record

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
)

// JSON forms of the nested types (both directions):
//
//	ARRAY<T>                  a JSON array of the elements
//	ROW<name T, ...>          a JSON object of the fields, as a row is one
//	MAP<STRING, V>            a JSON object: {"k": v, ...}
//	MAP<K, V>, K not STRING   a JSON array of entries: [{"key": k, "value": v}, ...]
//
// A MAP's entries keep their order both ways, and a key given twice is an
// error (ErrInvalidValue). A ROW object follows the rules of a row object:
// unknown fields are refused, a missing nullable field is null. Errors
// about a value inside a nested one carry its ColumnError.Path.

// nestedValue returns the payload of an ARRAY, MAP or ROW value of column
// col read from raw, a JSON value without surrounding space.
func (c *JSONCodec) nestedValue(col *Column, raw []byte) ([]byte, error) {
	switch col.Type.kind {
	case KindArray:
		return c.arrayValue(col, raw)
	case KindRow:
		return c.rowValue(col, raw)
	case KindMap:
		if col.Type.children[0].Type.kind == KindString {
			return c.objectMapValue(col, raw)
		}
		return c.entriesMapValue(col, raw)
	}
	return nil, newColumnError(col.Name, "unsupported type "+col.Type.String(), ErrWrongType)
}

// nestError makes an error about a value inside column col, at path step,
// out of the error err about that value.
func nestError(col *Column, step string, err error) error {
	var ce *ColumnError
	if !errors.As(err, &ce) {
		return err
	}
	return &ColumnError{Column: col.Name, Path: step + ce.Path, Err: ce.Err}
}

// newArrayEncoder returns an encoder for the elements of column elem (a
// one-column slice) of a valid type.
func newArrayEncoder(elem []Column) *ArrayEncoder {
	return &ArrayEncoder{e: RowEncoder{columns: elem, varlen: []bool{!elem[0].Type.IsFixedWidth()}}}
}

func (c *JSONCodec) arrayValue(col *Column, raw []byte) ([]byte, error) {
	if raw[0] != '[' {
		return nil, wrongJSONType(col, raw, "array")
	}
	a := newArrayEncoder(col.Type.children)
	err := forEachElement(raw, func(j int, value []byte) error {
		if err := c.setValue(&a.e, a.next(), &col.Type.children[0], value); err != nil {
			return nestError(col, elementStep(j), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a.Finish(nil)
}

func (c *JSONCodec) rowValue(col *Column, raw []byte) ([]byte, error) {
	if raw[0] != '{' {
		return nil, wrongJSONType(col, raw, "object")
	}
	fields := col.Type.children
	e := &RowEncoder{
		columns:  fields,
		varlen:   make([]bool, len(fields)),
		states:   make([]fieldState, len(fields)),
		slots:    make([]uint64, len(fields)),
		payloads: make([]payloadRef, len(fields)),
	}
	for i, f := range fields {
		e.varlen[i] = !f.Type.IsFixedWidth()
	}
	seen := make([]bool, len(fields))
	err := forEachMember(raw, func(rawKey, value []byte) error {
		var name string
		if err := json.Unmarshal(rawKey, &name); err != nil {
			return newColumnError(col.Name, "field name "+valueText(rawKey)+" is not a JSON string", ErrInvalidJSON)
		}
		i := fieldIndex(fields, name)
		switch {
		case i < 0:
			return newPathError(col.Name, "."+name, "not a field of "+col.Type.String(), ErrUnknownColumn)
		case seen[i]:
			return newPathError(col.Name, "."+name, "given twice", ErrDuplicateColumn)
		}
		seen[i] = true
		if err := c.setValue(e, i, &fields[i], value); err != nil {
			return nestError(col, "."+name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	payload, err := e.Finish(nil)
	if ce := (*ColumnError)(nil); errors.As(err, &ce) { // a missing NOT NULL field
		return nil, nestError(col, "."+ce.Column, &ColumnError{Err: ce.Err})
	}
	return payload, err
}

func fieldIndex(fields []Column, name string) int {
	for i := range fields {
		if fields[i].Name == name {
			return i
		}
	}
	return -1
}

// objectMapValue reads a MAP with STRING keys from a JSON object.
func (c *JSONCodec) objectMapValue(col *Column, raw []byte) ([]byte, error) {
	if raw[0] != '{' {
		return nil, wrongJSONType(col, raw, "object")
	}
	kv := col.Type.children
	keys, values := newArrayEncoder(kv[:1]), newArrayEncoder(kv[1:])
	err := forEachMember(raw, func(rawKey, value []byte) error {
		key, err := c.stringValue(&kv[0], rawKey) // strict, as STRING values are
		if err != nil {
			return nestError(col, "["+valueText(rawKey)+"]", err)
		}
		keys.AppendStringBytes(key)
		if err := c.setValue(&values.e, values.next(), &kv[1], value); err != nil {
			return nestError(col, "["+valueText(rawKey)+"]", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return finishMap(col, keys, values)
}

// entriesMapValue reads a MAP whose keys are not STRING from a JSON array of
// {"key": k, "value": v} objects.
func (c *JSONCodec) entriesMapValue(col *Column, raw []byte) ([]byte, error) {
	if raw[0] != '[' {
		return nil, wrongJSONType(col, raw, `array of {"key": …, "value": …} objects`)
	}
	kv := col.Type.children
	keys, values := newArrayEncoder(kv[:1]), newArrayEncoder(kv[1:])
	err := forEachElement(raw, func(j int, entry []byte) error {
		if entry[0] != '{' {
			return nestError(col, elementStep(j), wrongJSONType(&Column{Type: col.Type}, entry, `{"key": …, "value": …} object`))
		}
		var gotKey, gotValue bool
		err := forEachMember(entry, func(rawKey, value []byte) error {
			var err error
			switch string(rawKey) {
			case `"key"`:
				if gotKey {
					return newPathError(col.Name, elementStep(j)+".key", "given twice", ErrDuplicateColumn)
				}
				gotKey = true
				err = c.setValue(&keys.e, keys.next(), &kv[0], value)
			case `"value"`:
				if gotValue {
					return newPathError(col.Name, elementStep(j)+".value", "given twice", ErrDuplicateColumn)
				}
				gotValue = true
				err = c.setValue(&values.e, values.next(), &kv[1], value)
			default:
				return newPathError(col.Name, elementStep(j), "map entry member "+valueText(rawKey)+
					` is neither "key" nor "value"`, ErrUnknownColumn)
			}
			if err != nil {
				return nestError(col, elementStep(j)+"."+string(rawKey[1:len(rawKey)-1]), err)
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case !gotKey:
			return newPathError(col.Name, elementStep(j)+".key", "missing map key", ErrNullNotAllowed)
		case !gotValue:
			if err := c.setValue(&values.e, values.next(), &kv[1], []byte("null")); err != nil {
				return nestError(col, elementStep(j)+".value", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return finishMap(col, keys, values)
}

// finishMap returns the MAP payload of column col from its keys and values.
func finishMap(col *Column, keys, values *ArrayEncoder) ([]byte, error) {
	m := MapEncoder{typ: col.Type, keys: *keys, values: *values}
	payload, err := m.Finish(nil)
	if ce := (*ColumnError)(nil); errors.As(err, &ce) {
		return nil, &ColumnError{Column: col.Name, Path: ce.Path, Err: ce.Err}
	}
	return payload, err
}

// forEachElement calls fn with each element of raw, a well-formed JSON
// array, without surrounding space.
func forEachElement(raw []byte, fn func(j int, value []byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return jsonSyntaxError(err, raw)
	}
	for j := 0; dec.More(); j++ {
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return jsonSyntaxError(err, raw)
		}
		if err := fn(j, trimJSONSpace(value)); err != nil {
			return err
		}
	}
	return nil
}

// forEachMember calls fn with the key, as its JSON string literal, and the
// value of each member of raw, a well-formed JSON object. The literal lets
// the caller check the key's UTF-8 as strictly as a STRING value's, which
// the decoder's unescaped keys would not.
func forEachMember(raw []byte, fn func(key, value []byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return jsonSyntaxError(err, raw)
	}
	for dec.More() {
		// The decoder consumes the comma before a key and the colon after
		// it lazily, so the key's literal is what it read for the token.
		before := dec.InputOffset()
		if _, err := dec.Token(); err != nil {
			return jsonSyntaxError(err, raw)
		}
		key := bytes.TrimLeft(raw[before:dec.InputOffset()], " \t\r\n,")
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return jsonSyntaxError(err, raw)
		}
		if err := fn(key, trimJSONSpace(value)); err != nil {
			return err
		}
	}
	return nil
}

// appendValueJSON appends value i of a validated view as JSON.
func appendValueJSON(dst []byte, v RowView, i int) []byte {
	if v.IsNull(i) {
		return append(dst, "null"...)
	}
	t := v.column(i).Type
	switch t.kind {
	case KindBoolean:
		return strconv.AppendBool(dst, v.Bool(i))
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt:
		return strconv.AppendInt(dst, v.Int64(i), 10)
	case KindFloat:
		return appendJSONFloat(dst, float64(v.Float32(i)), 32)
	case KindDouble:
		return appendJSONFloat(dst, v.Float64(i), 64)
	case KindDecimal:
		neg, mag, _ := v.decimal(i)
		return appendDecimalText(dst, neg, mag, t.scale)
	case KindString:
		return appendJSONString(dst, v.StringBytes(i))
	case KindBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes(i))
		return append(dst, '"')
	case KindDate:
		dst = append(dst, '"')
		dst = appendDate(dst, v.Int64(i))
		return append(dst, '"')
	case KindTime:
		dst = append(dst, '"')
		dst = appendTimeOfDay(dst, v.Int64(i))
		return append(dst, '"')
	case KindTimestamp, KindTimestampLTZ:
		millis, nanos := v.Timestamp(i)
		dst = append(dst, '"')
		dst = appendTimestampText(dst, millis, nanos, t.precision, t.kind == KindTimestampLTZ)
		return append(dst, '"')
	case KindArray:
		a := v.Array(i)
		dst = append(dst, '[')
		for j := range a.Len() {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendValueJSON(dst, a.v, j)
		}
		return append(dst, ']')
	case KindRow:
		return appendRowJSON(dst, v.Row(i))
	case KindMap:
		return appendMapJSON(dst, t, v.Map(i))
	}
	return append(dst, "null"...) // no other kind validates
}

// appendMapJSON appends a MAP value: an object when its keys are STRING, an
// array of {"key": k, "value": v} objects otherwise.
func appendMapJSON(dst []byte, t DataType, m MapView) []byte {
	object := t.children[0].Type.kind == KindString
	if object {
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	for j := range m.Len() {
		if j > 0 {
			dst = append(dst, ',')
		}
		if object {
			dst = appendJSONString(dst, m.keys.StringBytes(j))
			dst = append(dst, ':')
			dst = appendValueJSON(dst, m.values.v, j)
			continue
		}
		dst = append(dst, `{"key":`...)
		dst = appendValueJSON(dst, m.keys.v, j)
		dst = append(dst, `,"value":`...)
		dst = appendValueJSON(dst, m.values.v, j)
		dst = append(dst, '}')
	}
	if object {
		return append(dst, '}')
	}
	return append(dst, ']')
}
