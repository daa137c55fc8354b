package record

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// ValidateRow checks that data is a valid row of schema s in the canonical
// layout described in row.go: its length, null bitmap and payload references,
// that NOT NULL columns are not null, and that each value is in range for its
// type (narrow integers, DATE, TIME, DECIMAL precision, timestamp range and
// precision, UTF-8 of STRING, canonical NaN, zero padding), nested values
// (ARRAY, MAP, ROW) checked by the same rules all the way down, with element
// counts that fit their payload and distinct map keys. When it returns nil,
// every RowView getter suited to a column's type returns a meaningful value
// and the row converts to JSON.
//
// ValidateRow never panics, whatever data holds, and does not allocate
// unless it fails or checks a map of more than 32 entries. Its recursion
// follows the schema's types, so it is at most MaxNestingDepth deep. It
// trusts s to be a validated schema, though an invalid one only makes it
// return an error. Errors match ErrInvalidRow; those about one column are
// *ColumnError values (with a Path for a value inside a nested one), and
// those about a null in a NOT NULL column also match ErrNullNotAllowed.
func ValidateRow(s Schema, data []byte) error {
	if len(data) > MaxRowBytes {
		return newRowError(strconv.Itoa(len(data)) + " bytes, more than the limit of " + strconv.Itoa(MaxRowBytes))
	}
	for i := range s.Columns {
		if c := &s.Columns[i]; c.Type.problem() != "" {
			return newColumnError(c.Name, "invalid row: "+c.Type.String()+": "+c.Type.problem(), ErrInvalidRow)
		}
	}
	pr := checkBlock(data, s.Columns, len(s.Columns), "column")
	switch {
	case pr.msg == "":
		return nil
	case pr.index < 0:
		return newRowError(pr.msg)
	case pr.null:
		return newPathError(s.Columns[pr.index].Name, pr.path, "invalid row: "+pr.msg, ErrInvalidRow, ErrNullNotAllowed)
	default:
		return newPathError(s.Columns[pr.index].Name, pr.path, "invalid row: "+pr.msg, ErrInvalidRow)
	}
}

// blockProblem is what is wrong with a block of values laid out as a row
// (a row, a ROW value, the elements of an ARRAY value); the zero value
// (msg "") when nothing is.
type blockProblem struct {
	index int    // the value at fault, or -1 for the block as a whole
	path  string // where inside that value, for a nested one (ColumnError.Path)
	msg   string // what is wrong; about a value, it starts with the type at fault
	null  bool   // a null in a NOT NULL value
}

// checkBlock checks data as a block of n values in the row layout, value i
// of column cols[min(i, len(cols)-1)], which must validate. noun names the
// values in messages: column, field, element, key or value. The caller
// ensures n is at most len(data)/8 or a schema's column count.
func checkBlock(data []byte, cols []Column, n int, noun string) blockProblem {
	end := fixedEnd(n)
	if len(data) < end {
		return blockProblem{index: -1, msg: strconv.Itoa(len(data)) + " bytes, shorter than the " + strconv.Itoa(end) +
			"-byte bitmap and fixed part of " + strconv.Itoa(n) + " " + noun + "s"}
	}
	if n%8 != 0 && data[n/8]>>(n%8) != 0 {
		return blockProblem{index: -1, msg: "null bitmap has bits set past the last " + noun}
	}
	slotsAt := bitmapBytes(n)
	varAt := end // where the next out-of-line payload must start
	for i := range n {
		c := &cols[min(i, len(cols)-1)]
		slotAt := slotsAt + slotBytes*i
		slot := binary.LittleEndian.Uint64(data[slotAt:])
		if data[i/8]&(1<<(i%8)) != 0 {
			if !c.Nullable {
				return blockProblem{index: i, msg: "null in NOT NULL " + noun, null: true}
			}
			if slot != 0 {
				return blockProblem{index: i, msg: c.Type.String() + ": slot of a null value is not zero"}
			}
			continue
		}
		var path, msg string
		typed := false // msg starts with the type at fault
		if c.Type.IsFixedWidth() {
			msg = checkFixedSlot(c.Type, slot)
		} else {
			var payload []byte
			payload, varAt, msg = locatePayload(data, slotAt, slot, varAt)
			if msg == "" {
				path, msg = checkPayload(c.Type, payload)
				typed = c.Type.IsNested()
			}
		}
		if msg != "" {
			if !typed {
				msg = c.Type.String() + ": " + msg
			}
			return blockProblem{index: i, path: path, msg: msg}
		}
	}
	if varAt != len(data) {
		return blockProblem{index: -1, msg: strconv.Itoa(len(data)-varAt) + " bytes after the last payload"}
	}
	return blockProblem{}
}

// checkFixedSlot says what is wrong with the slot of a non-null value of a
// fixed-width type t, or returns "".
func checkFixedSlot(t DataType, slot uint64) string {
	v := int64(slot)
	switch t.kind {
	case KindBoolean:
		if slot > 1 {
			return "value " + strconv.FormatUint(slot, 10) + " is neither 0 nor 1"
		}
	case KindFloat:
		if slot>>32 != 0 {
			return "high bytes of a FLOAT slot are not zero"
		}
		if bits := uint32(slot); bits&0x7f800000 == 0x7f800000 && bits&0x007fffff != 0 && bits != canonicalNaN32 {
			return "NaN is not the canonical NaN"
		}
	case KindDouble:
		if slot&0x7ff0000000000000 == 0x7ff0000000000000 && slot&0x000fffffffffffff != 0 && slot != canonicalNaN64 {
			return "NaN is not the canonical NaN"
		}
	case KindDecimal:
		limit := pow10int64(t.precision)
		if v <= -limit || v >= limit {
			return "unscaled value " + strconv.FormatInt(v, 10) + " has more than " + strconv.Itoa(t.precision) + " digits"
		}
	case KindTimestamp, KindTimestampLTZ:
		if v < minTimestampMicros || v > maxTimestampMicros {
			return "epoch microseconds " + strconv.FormatInt(v, 10) + " outside the years 0000 to 9999"
		}
		if _, sub := floorDivMod(v, pow10int64(MaxCompactTimestampPrecision-t.precision)); sub != 0 {
			return "more fractional digits than the precision"
		}
	default:
		lo, hi, _ := intRange(t.kind)
		if v < lo || v > hi {
			return "value " + strconv.FormatInt(v, 10) + " out of range"
		}
	}
	return ""
}

// locatePayload finds the payload that slot (at offset slotAt of data)
// refers to. An out-of-line payload must start at varAt; the returned varAt
// is where the next one must start.
func locatePayload(data []byte, slotAt int, slot uint64, varAt int) (payload []byte, nextVarAt int, msg string) {
	if slot&inlineFlag != 0 {
		n := int(slot >> 56 & 0x7f)
		if n > maxInlinePayload {
			return nil, varAt, "inline payload length " + strconv.Itoa(n) + " exceeds 7"
		}
		if (slot&(1<<56-1))>>(8*n) != 0 {
			return nil, varAt, "inline payload padding is not zero"
		}
		return data[slotAt : slotAt+n], varAt, ""
	}
	off, n := int(uint32(slot)), int(slot>>32)
	switch {
	case n <= maxInlinePayload:
		return nil, varAt, "payload of " + strconv.Itoa(n) + " bytes is not inline"
	case off != varAt:
		return nil, varAt, "payload at offset " + strconv.Itoa(off) + ", want " + strconv.Itoa(varAt)
	case n > len(data)-off:
		return nil, varAt, "payload of " + strconv.Itoa(n) + " bytes at offset " + strconv.Itoa(off) + " ends past the row"
	}
	return data[off : off+n], off + n, ""
}

// checkPayload says what is wrong with the payload of a non-null value of a
// variable-length type t, or returns "". For a nested value, path locates the
// value at fault inside it, and msg starts with that value's type.
func checkPayload(t DataType, p []byte) (path, msg string) {
	if t.IsNested() {
		return checkNested(t, p)
	}
	return "", checkFlatPayload(t, p)
}

// checkFlatPayload is checkPayload for a type that is not nested.
func checkFlatPayload(t DataType, p []byte) string {
	switch t.kind {
	case KindString:
		if !utf8.Valid(p) {
			return "not valid UTF-8"
		}
	case KindBytes:
	case KindDecimal:
		if !isMinimalTwos(p) {
			return "unscaled value is not minimal two's complement of 1 to 16 bytes"
		}
		if _, mag, _ := decodeTwos(p); !fitsDecimalPrecision(mag, t.precision) {
			return "unscaled value has more than " + strconv.Itoa(t.precision) + " digits"
		}
	case KindTimestamp, KindTimestampLTZ:
		if len(p) != timestampPayloadBytes {
			return "payload of " + strconv.Itoa(len(p)) + " bytes, want 12"
		}
		millis := int64(binary.LittleEndian.Uint64(p))
		nanos := int32(binary.LittleEndian.Uint32(p[8:]))
		if msg := checkTimestamp(millis, nanos, t.precision); msg != "" {
			return msg
		}
	default:
		return "not a variable-length type"
	}
	return ""
}

// checkNested checks the payload of an ARRAY, MAP or ROW value of type t, a
// valid type, as ValidateRow does: it returns where inside the value the
// problem is (ColumnError.Path) and what it is, starting with the type of
// the value at fault; or "", "".
func checkNested(t DataType, p []byte) (path, msg string) {
	switch t.kind {
	case KindRow:
		pr := checkBlock(p, t.children, len(t.children), "field")
		if pr.index >= 0 {
			return "." + t.children[pr.index].Name + pr.path, pr.msg
		}
		return nestedBlockProblem(t, "", pr)
	case KindArray:
		return checkArray(t, "", p, t.children, "element")
	case KindMap:
		return checkMap(t, p)
	}
	return "", t.String() + ": not a nested type"
}

// nestedBlockProblem returns the path and message of a problem found in the
// block of a nested value of type t, whose path is at.
func nestedBlockProblem(t DataType, at string, pr blockProblem) (path, msg string) {
	if pr.msg == "" {
		return "", ""
	}
	if pr.index < 0 {
		return at, t.String() + ": " + pr.msg
	}
	return at + elementStep(pr.index) + pr.path, pr.msg
}

// checkArray checks an ARRAY payload p of element column elem (one column)
// inside a value of type t, at path at (".keys" for the keys of a map, ""
// for an array itself).
func checkArray(t DataType, at string, p []byte, elem []Column, noun string) (path, msg string) {
	n, block, ok := splitArray(p)
	if !ok {
		if len(p) < arrayCountBytes {
			return at, t.String() + ": array payload of " + strconv.Itoa(len(p)) + " bytes, shorter than its element count"
		}
		return at, t.String() + ": element count " + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(p)), 10) +
			" does not fit the " + strconv.Itoa(len(p)-arrayCountBytes) + " bytes that follow"
	}
	return nestedBlockProblem(t, at, checkBlock(block, elem, n, noun))
}

// checkMap checks a MAP payload: a row of two NOT NULL arrays, the keys and
// the values, of the same length, with distinct keys.
func checkMap(t DataType, p []byte) (path, msg string) {
	if len(p) < mapHeadBytes {
		return "", t.String() + ": map payload of " + strconv.Itoa(len(p)) + " bytes, shorter than its " +
			strconv.Itoa(mapHeadBytes) + "-byte head"
	}
	if p[0] != 0 {
		return "", t.String() + ": null bitmap of a map is not zero"
	}
	keys, varAt, msg := locatePayload(p, 1, binary.LittleEndian.Uint64(p[1:]), mapHeadBytes)
	if msg != "" {
		return ".keys", t.String() + ": " + msg
	}
	values, varAt, msg := locatePayload(p, 1+slotBytes, binary.LittleEndian.Uint64(p[1+slotBytes:]), varAt)
	if msg != "" {
		return ".values", t.String() + ": " + msg
	}
	if varAt != len(p) {
		return "", t.String() + ": " + strconv.Itoa(len(p)-varAt) + " bytes after the values"
	}
	if path, msg := checkArray(t, ".keys", keys, t.children[:1], "key"); msg != "" {
		return path, msg
	}
	if path, msg := checkArray(t, ".values", values, t.children[1:], "value"); msg != "" {
		return path, msg
	}
	m := mapView(t.children, p)
	if m.keys.Len() != m.values.Len() {
		return "", t.String() + ": " + strconv.Itoa(m.keys.Len()) + " keys but " + strconv.Itoa(m.values.Len()) + " values"
	}
	if i, j := duplicateKey(m.keys.v); j >= 0 {
		return ".keys" + elementStep(j), t.children[0].Type.String() + ": duplicate key (also key " + strconv.Itoa(i) + ")"
	}
	return "", ""
}
