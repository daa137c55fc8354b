package record

import (
	"encoding/binary"
	"math/big"
	"slices"
	"strconv"
)

// SetNested sets an ARRAY, MAP or ROW column to encoded, a value that an
// ArrayEncoder, MapEncoder or row value encoder (NewRowValueEncoder)
// produced, which it copies. The value is checked against the column's type
// as ValidateRow checks rows; a value that does not fit is an error
// matching ErrInvalidValue whose Path says where inside it the problem is.
func (e *RowEncoder) SetNested(i int, encoded []byte) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if !c.Type.IsNested() {
		e.wrongSetter(c, "SetNested")
		return
	}
	if path, msg := checkNested(c.Type, encoded); msg != "" {
		e.fail(newPathError(c.Name, path, "nested value does not fit "+c.Type.String()+": "+msg, ErrInvalidValue))
		return
	}
	e.setNestedChecked(i, encoded)
}

// setNestedChecked sets value i to a nested payload known to fit its type.
func (e *RowEncoder) setNestedChecked(i int, encoded []byte) {
	start := len(e.varBuf)
	e.varBuf = append(e.varBuf, encoded...)
	e.setPayload(i, start)
}

// NewRowValueEncoder returns an encoder of values of the type ROW<fields>:
// a ROW value is encoded exactly as a row of its fields, so the encoder is
// a RowEncoder of the schema of the fields, whose Finish returns a value to
// give to SetNested. The fields must make a valid ROW type.
func NewRowValueEncoder(fields []Column) (*RowEncoder, error) {
	if err := Row(fields).Validate(); err != nil {
		return nil, err
	}
	return NewRowEncoder(Schema{Columns: fields})
}

// ArrayEncoder builds ARRAY values of one element type, for SetNested (or
// AppendNested of an enclosing array). Append the elements in order with the
// Append methods, which mirror RowEncoder's setters, then call Finish.
//
// Like RowEncoder, the Append methods keep the first error, which Finish
// returns, and an encoder keeps its buffers between values. Errors about an
// element name the column "element". An ArrayEncoder is not safe for
// concurrent use.
type ArrayEncoder struct {
	e RowEncoder // over the element column, one value per element
}

// NewArrayEncoder returns an encoder of ARRAY<elemType> values, whose
// elements may be null when elemNullable is set. The type must validate.
func NewArrayEncoder(elemType DataType, elemNullable bool) (*ArrayEncoder, error) {
	t := Array(elemType, elemNullable)
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &ArrayEncoder{e: RowEncoder{columns: t.children, varlen: []bool{!elemType.IsFixedWidth()}}}, nil
}

// next adds an unset element and returns its index.
func (a *ArrayEncoder) next() int {
	a.e.states = append(a.e.states, fieldUnset)
	a.e.slots = append(a.e.slots, 0)
	a.e.payloads = append(a.e.payloads, payloadRef{})
	return len(a.e.states) - 1
}

// Len returns the number of elements appended since the last Finish.
func (a *ArrayEncoder) Len() int { return len(a.e.states) }

// Reset discards the elements appended since the last Finish and any
// pending error.
func (a *ArrayEncoder) Reset() {
	a.e.states = a.e.states[:0]
	a.e.slots = a.e.slots[:0]
	a.e.payloads = a.e.payloads[:0]
	a.e.Reset()
}

// AppendNull appends a null; the elements must be nullable.
func (a *ArrayEncoder) AppendNull() { a.e.SetNull(a.next()) }

// AppendBool appends a BOOLEAN element.
func (a *ArrayEncoder) AppendBool(v bool) { a.e.SetBool(a.next(), v) }

// AppendInt64 appends an element as RowEncoder.SetInt64 sets a column.
func (a *ArrayEncoder) AppendInt64(v int64) { a.e.SetInt64(a.next(), v) }

// AppendFloat32 appends a FLOAT element.
func (a *ArrayEncoder) AppendFloat32(v float32) { a.e.SetFloat32(a.next(), v) }

// AppendFloat64 appends a DOUBLE element.
func (a *ArrayEncoder) AppendFloat64(v float64) { a.e.SetFloat64(a.next(), v) }

// AppendDecimal appends a DECIMAL element as RowEncoder.SetDecimal.
func (a *ArrayEncoder) AppendDecimal(unscaled int64) { a.e.SetDecimal(a.next(), unscaled) }

// AppendDecimalBytes appends a DECIMAL element as RowEncoder.SetDecimalBytes.
func (a *ArrayEncoder) AppendDecimalBytes(unscaled []byte) { a.e.SetDecimalBytes(a.next(), unscaled) }

// AppendDecimalBig appends a DECIMAL element as RowEncoder.SetDecimalBig.
func (a *ArrayEncoder) AppendDecimalBig(unscaled *big.Int) { a.e.SetDecimalBig(a.next(), unscaled) }

// AppendString appends a STRING element; v must be valid UTF-8.
func (a *ArrayEncoder) AppendString(v string) { a.e.SetString(a.next(), v) }

// AppendStringBytes appends a STRING element from UTF-8 bytes.
func (a *ArrayEncoder) AppendStringBytes(v []byte) { a.e.SetStringBytes(a.next(), v) }

// AppendBytes appends a BYTES element.
func (a *ArrayEncoder) AppendBytes(v []byte) { a.e.SetBytes(a.next(), v) }

// AppendTimestamp appends a TIMESTAMP or TIMESTAMP_LTZ element as
// RowEncoder.SetTimestamp.
func (a *ArrayEncoder) AppendTimestamp(millis int64, nanosOfMilli int32) {
	a.e.SetTimestamp(a.next(), millis, nanosOfMilli)
}

// AppendNested appends an ARRAY, MAP or ROW element as RowEncoder.SetNested.
func (a *ArrayEncoder) AppendNested(encoded []byte) { a.e.SetNested(a.next(), encoded) }

// Finish appends the ARRAY value to dst and resets the encoder. On error,
// dst is returned unchanged.
func (a *ArrayEncoder) Finish(dst []byte) ([]byte, error) {
	defer a.Reset()
	if a.e.err != nil {
		return dst, a.e.err
	}
	start := len(dst)
	out, err := a.e.appendBlock(binary.LittleEndian.AppendUint32(dst, uint32(len(a.e.states))))
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// MapEncoder builds MAP values of one key and value type, for SetNested.
// Append entry j's key to Keys() and its value to Values(), in entry order,
// then call Finish, which checks that there are as many keys as values and
// that the keys are distinct. Entries keep their order. A MapEncoder is not
// safe for concurrent use.
type MapEncoder struct {
	typ          DataType
	keys, values ArrayEncoder
	scratch      []byte
}

// NewMapEncoder returns an encoder of MAP<key, value> values, whose values
// may be null when valueNullable is set. The type must validate: keys are of
// a type that is not nested.
func NewMapEncoder(key, value DataType, valueNullable bool) (*MapEncoder, error) {
	t := Map(key, value, valueNullable)
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &MapEncoder{
		typ:    t,
		keys:   ArrayEncoder{e: RowEncoder{columns: t.children[:1], varlen: []bool{!key.IsFixedWidth()}}},
		values: ArrayEncoder{e: RowEncoder{columns: t.children[1:], varlen: []bool{!value.IsFixedWidth()}}},
	}, nil
}

// Keys returns the encoder of the keys.
func (m *MapEncoder) Keys() *ArrayEncoder { return &m.keys }

// Values returns the encoder of the values.
func (m *MapEncoder) Values() *ArrayEncoder { return &m.values }

// Reset discards the entries appended since the last Finish and any pending
// error.
func (m *MapEncoder) Reset() {
	m.keys.Reset()
	m.values.Reset()
}

// Finish appends the MAP value to dst and resets the encoder. On error, dst
// is returned unchanged; keys and values in different numbers and a key
// given twice are errors matching ErrInvalidValue.
func (m *MapEncoder) Finish(dst []byte) ([]byte, error) {
	defer m.Reset()
	if nk, nv := m.keys.Len(), m.values.Len(); nk != nv {
		if err := firstError(m.keys.e.err, m.values.e.err); err != nil {
			return dst, err
		}
		return dst, newColumnError(m.typ.String(), strconv.Itoa(nk)+" keys but "+strconv.Itoa(nv)+" values", ErrInvalidValue)
	}
	keys, err := m.keys.Finish(m.scratch[:0])
	if err != nil {
		return dst, err
	}
	both, err := m.values.Finish(keys)
	m.scratch = both
	if err != nil {
		return dst, err
	}
	kv := m.typ.children
	if i, j := duplicateKey(arrayView(kv[:1], keys).v); j >= 0 {
		return dst, newPathError(m.typ.String(), ".keys"+elementStep(j), "duplicate key (also key "+strconv.Itoa(i)+")", ErrInvalidValue)
	}
	return appendMapPayload(dst, both[:len(keys)], both[len(keys):]), nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// appendMapPayload appends the MAP payload of a keys and a values ARRAY
// payload: a row of the two, neither null.
func appendMapPayload(dst, keys, values []byte) []byte {
	size := mapHeadBytes
	for _, p := range [2][]byte{keys, values} {
		if len(p) > maxInlinePayload {
			size += len(p)
		}
	}
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	head := dst[start:]
	clear(head[:mapHeadBytes])
	varAt := putPayload(head, head[1:1+slotBytes], mapHeadBytes, keys)
	putPayload(head, head[1+slotBytes:mapHeadBytes], varAt, values)
	return dst
}
