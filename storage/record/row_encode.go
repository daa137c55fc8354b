package record

import (
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"
)

// RowEncoder builds rows of one schema in the layout described in row.go.
//
// Set the fields of a row with the setters, in any order, then call Finish to
// append the row to a buffer; Finish also resets the encoder for the next row.
// A column left unset is null; a column set twice keeps its last value.
//
// Setters do not return errors: the first misuse or bad value (a setter that
// does not fit the column type, a value out of range, invalid UTF-8, a null
// for a NOT NULL column) is kept, later setters are ignored, and Finish
// returns the error. Errors about a column are *ColumnError values.
//
// In steady state an encoder allocates nothing: it keeps its buffers between
// rows, and Finish only grows dst when dst lacks capacity. A RowEncoder is not
// safe for concurrent use.
type RowEncoder struct {
	// columns are the row's columns, or for an ArrayEncoder the element
	// column alone: value i is of column columns[min(i, len(columns)-1)],
	// and varlen is indexed the same way.
	columns  []Column
	varlen   []bool       // per column: !Type.IsFixedWidth()
	states   []fieldState // per value
	slots    []uint64     // per fixed-width value: the slot value
	payloads []payloadRef // per variable-length value: its bytes in varBuf
	varBuf   []byte
	err      error
}

type fieldState uint8

const (
	fieldUnset fieldState = iota
	fieldNull
	fieldSet
)

// payloadRef locates a payload in RowEncoder.varBuf.
type payloadRef struct{ start, end int }

// NewRowEncoder returns an encoder for rows of s, which must validate.
func NewRowEncoder(s Schema) (*RowEncoder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	n := len(s.Columns)
	e := &RowEncoder{
		columns:  slices.Clone(s.Columns),
		varlen:   make([]bool, n),
		states:   make([]fieldState, n),
		slots:    make([]uint64, n),
		payloads: make([]payloadRef, n),
	}
	for i, c := range e.columns {
		e.varlen[i] = !c.Type.IsFixedWidth()
	}
	return e, nil
}

// Reset discards the fields set since the last Finish and any pending error.
func (e *RowEncoder) Reset() {
	clear(e.states)
	e.varBuf = e.varBuf[:0]
	e.err = nil
}

// fail keeps err if it is the first error of the row.
func (e *RowEncoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// column returns column i, or ok=false if the row already failed or i is out
// of range.
func (e *RowEncoder) column(i int) (c *Column, ok bool) {
	if e.err != nil {
		return nil, false
	}
	if uint(i) >= uint(len(e.states)) {
		e.fail(&detailError{
			pkg:   "record",
			msg:   "column index " + strconv.Itoa(i) + " out of range for " + strconv.Itoa(len(e.states)) + " columns",
			kinds: []error{ErrUnknownColumn},
		})
		return nil, false
	}
	return &e.columns[min(i, len(e.columns)-1)], true
}

// isVarlen reports whether value i is a variable-length payload.
func (e *RowEncoder) isVarlen(i int) bool { return e.varlen[min(i, len(e.varlen)-1)] }

// wrongSetter records the use of a setter on a column it does not serve.
func (e *RowEncoder) wrongSetter(c *Column, setter string) {
	e.fail(newColumnError(c.Name, setter+" does not apply to a "+c.Type.String()+" column", ErrWrongType))
}

func (e *RowEncoder) setSlot(i int, v uint64) {
	e.slots[i] = v
	e.states[i] = fieldSet
}

// setPayload records that column i's payload is varBuf[start:].
func (e *RowEncoder) setPayload(i, start int) {
	e.payloads[i] = payloadRef{start: start, end: len(e.varBuf)}
	e.states[i] = fieldSet
}

// SetNull sets column i to null; the column must be nullable.
func (e *RowEncoder) SetNull(i int) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if !c.Nullable {
		e.fail(newColumnError(c.Name, "null for NOT NULL column", ErrNullNotAllowed))
		return
	}
	e.states[i] = fieldNull
}

// SetBool sets a BOOLEAN column.
func (e *RowEncoder) SetBool(i int, v bool) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if c.Type.kind != KindBoolean {
		e.wrongSetter(c, "SetBool")
		return
	}
	var slot uint64
	if v {
		slot = 1
	}
	e.setSlot(i, slot)
}

// SetInt64 sets a TINYINT, SMALLINT, INT or BIGINT column, a DATE column to
// days since 1970-01-01 (0000-01-01 to 9999-12-31) or a TIME column to
// milliseconds since midnight (0 to 86,399,999). Values out of the column's
// range are errors matching ErrOverflow.
func (e *RowEncoder) SetInt64(i int, v int64) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	lo, hi, ok := intRange(c.Type.kind)
	if !ok {
		e.wrongSetter(c, "SetInt64")
		return
	}
	if v < lo || v > hi {
		e.fail(newColumnError(c.Name, "value "+strconv.FormatInt(v, 10)+" out of range for "+c.Type.String(), ErrOverflow))
		return
	}
	e.setSlot(i, uint64(v))
}

// SetFloat32 sets a FLOAT column. Every NaN is stored as the canonical NaN.
func (e *RowEncoder) SetFloat32(i int, v float32) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if c.Type.kind != KindFloat {
		e.wrongSetter(c, "SetFloat32")
		return
	}
	bits := math.Float32bits(v)
	if v != v {
		bits = canonicalNaN32
	}
	e.setSlot(i, uint64(bits))
}

// SetFloat64 sets a DOUBLE column. Every NaN is stored as the canonical NaN.
func (e *RowEncoder) SetFloat64(i int, v float64) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if c.Type.kind != KindDouble {
		e.wrongSetter(c, "SetFloat64")
		return
	}
	bits := math.Float64bits(v)
	if v != v {
		bits = canonicalNaN64
	}
	e.setSlot(i, bits)
}

// SetDecimal sets a DECIMAL(p,s) column to the unscaled value (the value
// times 10^s), which must have at most p digits.
func (e *RowEncoder) SetDecimal(i int, unscaled int64) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	neg, mag := magnitudeOfInt64(unscaled)
	e.setDecimal(i, c, "SetDecimal", neg, mag)
}

// SetDecimalBytes sets a DECIMAL(p,s) column to the unscaled value given as
// big-endian two's complement, the form of Java's BigInteger.toByteArray.
// Redundant leading sign bytes are allowed; the value must have at most p
// digits.
func (e *RowEncoder) SetDecimalBytes(i int, unscaled []byte) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	for len(unscaled) > 1 && redundantSignByte(unscaled[0], unscaled[1]) {
		unscaled = unscaled[1:]
	}
	if len(unscaled) == 0 {
		e.fail(newColumnError(c.Name, "empty unscaled decimal bytes", ErrInvalidValue))
		return
	}
	neg, mag, ok := decodeTwos(unscaled)
	if !ok {
		e.fail(newColumnError(c.Name, "unscaled value of "+strconv.Itoa(len(unscaled))+" bytes exceeds "+c.Type.String(), ErrOverflow))
		return
	}
	e.setDecimal(i, c, "SetDecimalBytes", neg, mag)
}

// SetDecimalBig sets a DECIMAL(p,s) column to the unscaled value, which must
// have at most p digits.
func (e *RowEncoder) SetDecimalBig(i int, unscaled *big.Int) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if unscaled == nil {
		e.fail(newColumnError(c.Name, "nil unscaled decimal", ErrInvalidValue))
		return
	}
	neg, mag, ok := magnitudeOfBig(unscaled)
	if !ok {
		e.fail(newColumnError(c.Name, "unscaled value "+unscaled.String()+" exceeds "+c.Type.String(), ErrOverflow))
		return
	}
	e.setDecimal(i, c, "SetDecimalBig", neg, mag)
}

func (e *RowEncoder) setDecimal(i int, c *Column, setter string, neg bool, mag uint128) {
	if c.Type.kind != KindDecimal {
		e.wrongSetter(c, setter)
		return
	}
	if !fitsDecimalPrecision(mag, c.Type.precision) {
		text := appendDecimalText(nil, neg, mag, 0)
		e.fail(newColumnError(c.Name, "unscaled value "+string(text)+" exceeds "+c.Type.String(), ErrOverflow))
		return
	}
	if !e.isVarlen(i) {
		v, _ := int64OfMagnitude(neg, mag)
		e.setSlot(i, uint64(v))
		return
	}
	start := len(e.varBuf)
	e.varBuf = appendTwos(e.varBuf, neg, mag)
	e.setPayload(i, start)
}

// SetString sets a STRING column; v must be valid UTF-8.
func (e *RowEncoder) SetString(i int, v string) {
	if e.startString(i, "SetString", utf8.ValidString(v)) {
		start := len(e.varBuf)
		e.varBuf = append(e.varBuf, v...)
		e.setPayload(i, start)
	}
}

// SetStringBytes sets a STRING column from UTF-8 bytes, which it copies.
func (e *RowEncoder) SetStringBytes(i int, v []byte) {
	if e.startString(i, "SetStringBytes", utf8.Valid(v)) {
		start := len(e.varBuf)
		e.varBuf = append(e.varBuf, v...)
		e.setPayload(i, start)
	}
}

// startString checks that column i is a STRING and the value valid UTF-8,
// recording the error otherwise.
func (e *RowEncoder) startString(i int, setter string, validUTF8 bool) bool {
	c, ok := e.column(i)
	if !ok {
		return false
	}
	if c.Type.kind != KindString {
		e.wrongSetter(c, setter)
		return false
	}
	if !validUTF8 {
		e.fail(newColumnError(c.Name, "string is not valid UTF-8", ErrInvalidUTF8))
		return false
	}
	return true
}

// SetBytes sets a BYTES column to a copy of v. A nil v is an empty value,
// not null.
func (e *RowEncoder) SetBytes(i int, v []byte) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if c.Type.kind != KindBytes {
		e.wrongSetter(c, "SetBytes")
		return
	}
	start := len(e.varBuf)
	e.varBuf = append(e.varBuf, v...)
	e.setPayload(i, start)
}

// SetTimestamp sets a TIMESTAMP or TIMESTAMP_LTZ column to millis since
// 1970-01-01T00:00:00 (UTC for TIMESTAMP_LTZ) plus nanosOfMilli (0 to
// 999,999). The value must lie in the years 0000 to 9999 and have no digits
// past the column's precision: a TIMESTAMP(3) takes no nanoseconds, for
// example. Nothing is rounded.
func (e *RowEncoder) SetTimestamp(i int, millis int64, nanosOfMilli int32) {
	c, ok := e.column(i)
	if !ok {
		return
	}
	if c.Type.kind != KindTimestamp && c.Type.kind != KindTimestampLTZ {
		e.wrongSetter(c, "SetTimestamp")
		return
	}
	if msg := checkTimestamp(millis, nanosOfMilli, c.Type.precision); msg != "" {
		e.fail(newColumnError(c.Name, msg+" for "+c.Type.String(), ErrOverflow))
		return
	}
	if !e.isVarlen(i) {
		e.setSlot(i, uint64(millis*1000+int64(nanosOfMilli/1000)))
		return
	}
	start := len(e.varBuf)
	e.varBuf = binary.LittleEndian.AppendUint64(e.varBuf, uint64(millis))
	e.varBuf = binary.LittleEndian.AppendUint32(e.varBuf, uint32(nanosOfMilli))
	e.setPayload(i, start)
}

// checkTimestamp says what is wrong with a timestamp value for a column of
// the given precision, or returns "".
func checkTimestamp(millis int64, nanosOfMilli int32, precision int) string {
	if nanosOfMilli < 0 || nanosOfMilli >= nanosPerMilli {
		return "nanoseconds of millisecond " + strconv.Itoa(int(nanosOfMilli)) + " out of range [0, 999999]"
	}
	if millis < minTimestampMillis || millis > maxTimestampMillis {
		return "epoch milliseconds " + strconv.FormatInt(millis, 10) + " outside the years 0000 to 9999"
	}
	_, millisOfSecond := floorDivMod(millis, 1000)
	nanosOfSecond := millisOfSecond*nanosPerMilli + int64(nanosOfMilli)
	if nanosOfSecond%pow10int64(9-precision) != 0 {
		return "fraction of second ." + string(appendPadded(nil, nanosOfSecond, 9)) + " has more than " + strconv.Itoa(precision) + " digits"
	}
	return ""
}

// Finish appends the row to dst and resets the encoder. On error, dst is
// returned unchanged; the error is the first one recorded by a setter, or a
// *ColumnError matching ErrNullNotAllowed for an unset NOT NULL column.
func (e *RowEncoder) Finish(dst []byte) ([]byte, error) {
	defer e.Reset()
	if e.err != nil {
		return dst, e.err
	}
	return e.appendBlock(dst)
}

// appendBlock appends the values set, in the row layout, to dst; on error
// it returns dst unchanged.
func (e *RowEncoder) appendBlock(dst []byte) ([]byte, error) {
	n := len(e.states)
	size := fixedEnd(n)
	for i, state := range e.states {
		switch state {
		case fieldUnset:
			if c := &e.columns[min(i, len(e.columns)-1)]; !c.Nullable {
				return dst, newColumnError(c.Name, "missing value for NOT NULL column", ErrNullNotAllowed)
			}
		case fieldSet:
			if e.isVarlen(i) {
				if l := e.payloads[i].end - e.payloads[i].start; l > maxInlinePayload {
					size += l
				}
			}
		}
	}
	if size > MaxRowBytes {
		return dst, &detailError{
			pkg:   "record",
			msg:   "row of " + strconv.Itoa(size) + " bytes exceeds the limit of " + strconv.Itoa(MaxRowBytes),
			kinds: []error{ErrOverflow},
		}
	}
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	row := dst[start:]
	clear(row[:fixedEnd(n)])
	slotsAt := bitmapBytes(n)
	varAt := fixedEnd(n)
	for i, state := range e.states {
		if state != fieldSet {
			row[i/8] |= 1 << (i % 8)
			continue
		}
		slot := row[slotsAt+slotBytes*i : slotsAt+slotBytes*(i+1)]
		if !e.isVarlen(i) {
			binary.LittleEndian.PutUint64(slot, e.slots[i])
			continue
		}
		varAt = putPayload(row, slot, varAt, e.varBuf[e.payloads[i].start:e.payloads[i].end])
	}
	return dst, nil
}

// putPayload stores a variable-length payload for the slot: inline when it
// fits (data, then 0x80|length in the last byte), otherwise at varAt in row
// with the slot holding offset and length. It returns the next varAt.
func putPayload(row, slot []byte, varAt int, p []byte) int {
	if len(p) <= maxInlinePayload {
		copy(slot, p)
		slot[7] = 0x80 | byte(len(p))
		return varAt
	}
	binary.LittleEndian.PutUint32(slot, uint32(varAt))
	binary.LittleEndian.PutUint32(slot[4:], uint32(len(p)))
	return varAt + copy(row[varAt:], p)
}
