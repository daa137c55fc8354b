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
// precision, UTF-8 of STRING, canonical NaN, zero padding). When it returns
// nil, every RowView getter suited to a column's type returns a meaningful
// value and the row converts to JSON.
//
// ValidateRow never panics, whatever data holds, and does not allocate unless
// it fails. It trusts s to be a validated schema, though an invalid one only
// makes it return an error. Errors match ErrInvalidRow; those about one
// column are *ColumnError values, and those about a null in a NOT NULL column
// also match ErrNullNotAllowed.
func ValidateRow(s Schema, data []byte) error {
	n := len(s.Columns)
	if len(data) > MaxRowBytes {
		return newRowError(strconv.Itoa(len(data)) + " bytes, more than the limit of " + strconv.Itoa(MaxRowBytes))
	}
	end := fixedEnd(n)
	if len(data) < end {
		return newRowError(strconv.Itoa(len(data)) + " bytes, shorter than the " + strconv.Itoa(end) +
			"-byte bitmap and fixed part of " + strconv.Itoa(n) + " columns")
	}
	if n%8 != 0 && data[n/8]>>(n%8) != 0 {
		return newRowError("null bitmap has bits set past the last column")
	}
	slotsAt := bitmapBytes(n)
	varAt := end // where the next out-of-line payload must start
	for i := range s.Columns {
		c := &s.Columns[i]
		slotAt := slotsAt + slotBytes*i
		slot := binary.LittleEndian.Uint64(data[slotAt:])
		if data[i/8]&(1<<(i%8)) != 0 {
			if !c.Nullable {
				return newColumnError(c.Name, "invalid row: null in NOT NULL column", ErrInvalidRow, ErrNullNotAllowed)
			}
			if slot != 0 {
				return columnRowError(c, "slot of a null value is not zero")
			}
			continue
		}
		if msg := c.Type.problem(); msg != "" {
			return columnRowError(c, msg)
		}
		var msg string
		if c.Type.IsFixedWidth() {
			msg = checkFixedSlot(c.Type, slot)
		} else {
			var payload []byte
			payload, varAt, msg = locatePayload(data, slotAt, slot, varAt)
			if msg == "" {
				msg = checkPayload(c.Type, payload)
			}
		}
		if msg != "" {
			return columnRowError(c, msg)
		}
	}
	if varAt != len(data) {
		return newRowError(strconv.Itoa(len(data)-varAt) + " bytes after the last payload")
	}
	return nil
}

func columnRowError(c *Column, msg string) error {
	return newColumnError(c.Name, "invalid row: "+c.Type.String()+": "+msg, ErrInvalidRow)
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
// variable-length type t, or returns "".
func checkPayload(t DataType, p []byte) string {
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
