// Row layout
//
// A row is the binary form of the values of one record under a Schema of n
// columns. Integers are little-endian unless said otherwise.
//
//	+-------------------+-------------------------+-----------------------+
//	| null bitmap       | fixed part              | variable part         |
//	| ceil(n/8) bytes   | n slots of 8 bytes      | payloads, column order|
//	+-------------------+-------------------------+-----------------------+
//
// Null bitmap: bit i%8 (least significant first) of byte i/8 is set when
// column i is null. Bits past n are zero.
//
// Fixed part: slot i is the 8 bytes at ceil(n/8) + 8*i, so every field is
// found in O(1). The slot of a null column is all zero. Otherwise it holds:
//
//	BOOLEAN                       0 or 1
//	TINYINT, SMALLINT, INT, BIGINT the value as a sign-extended int64
//	DATE                          days since 1970-01-01 as int64, 0000-01-01 to 9999-12-31
//	TIME                          milliseconds since midnight as int64, 0 to 86,399,999
//	FLOAT                         IEEE-754 binary32 bits in bytes 0-3, bytes 4-7 zero
//	DOUBLE                        IEEE-754 binary64 bits
//	DECIMAL(p,s), p ≤ 18          the unscaled value as int64, |v| < 10^p
//	TIMESTAMP(p), p ≤ 6           microseconds since 1970-01-01T00:00:00 as int64
//	TIMESTAMP_LTZ(p), p ≤ 6       microseconds since 1970-01-01T00:00:00Z as int64
//	any other type                a payload reference, below
//
// Variable-length payloads are:
//
//	STRING                        UTF-8 bytes
//	BYTES                         the bytes
//	DECIMAL(p,s), p > 18          the unscaled value, big-endian two's complement
//	                              of minimal length (1 to 16 bytes), |v| < 10^p
//	TIMESTAMP(p), p > 6 and       12 bytes: int64 milliseconds since the epoch,
//	TIMESTAMP_LTZ(p), p > 6       then int32 nanoseconds of the millisecond
//	ROW<f1 T1, ..., fk Tk>        a row of the fields, laid out exactly as a row of
//	                              a schema of those columns
//	ARRAY<T> of n elements        uint32 n, then a block of n values of type T laid
//	                              out as a row of n columns: null bitmap, n slots,
//	                              variable part, offsets from the block's start
//	MAP<K, V> of n entries        a row of two NOT NULL values, the keys and the
//	                              values, each an ARRAY payload of n elements; keys
//	                              are distinct and never null, entries keep their order
//
// A payload of at most 7 bytes lives inline in its slot: bytes 0 to len-1 hold
// it, byte 7 holds 0x80|len, and the bytes between are zero. A longer payload
// lives in the variable part and its slot holds its offset from the start of
// the row (uint32, bytes 0-3) and its length (uint32, bytes 4-7). Lengths are
// below 2^31 (rows are at most MaxRowBytes), so bit 63 tells the two slot
// forms apart. Out-of-line payloads follow the fixed part back to back, in
// column order, and the row ends with the last one.
//
// Timestamps and dates cover the years 0000 to 9999. A timestamp of precision
// p has zeros past its p-th fractional digit. NaNs are stored as the
// canonical quiet NaN (0x7fc00000 and 0x7ff8000000000000).
//
// Nested values follow the same rules all the way down (at most
// MaxNestingDepth levels, as their types): a nested block has no bits set
// past its values, zero slots for nulls, payloads back to back in value
// order and nothing after the last; an element count takes at least its 8
// bytes of slots, so a count larger than the payload allows is refused
// before anything is sized by it. Equal map keys are equal bytes (the
// encoding being canonical), which is how ValidateRow finds a key given
// twice.
//
// Together these rules make the encoding canonical: each sequence of values
// (floats taken bit for bit) has exactly one valid row, which is what
// RowEncoder produces and what ValidateRow checks, so rows can be compared
// and hashed as bytes.
//
// For example, under "id BIGINT NOT NULL, name STRING, note STRING, tag
// STRING" the row (7, "hello, world", "hi", NULL) is 1 + 4*8 + 12 = 45 bytes:
//
//	08                                   null bitmap: column 3 is null
//	07 00 00 00 00 00 00 00              id = 7
//	21 00 00 00 0c 00 00 00              name: 12 bytes at offset 33
//	68 69 00 00 00 00 00 82              note: "hi", inline
//	00 00 00 00 00 00 00 00              tag: null
//	68 65 6c 6c 6f 2c 20 77 6f 72 6c 64  "hello, world"
//
// Under "tags ARRAY<STRING NOT NULL>" the row (["a", "hello, world"]) is
// 1 + 8 + 33 = 42 bytes; the column's payload is the 33 bytes at offset 9:
//
//	00                                   null bitmap of the row
//	09 00 00 00 21 00 00 00              tags: 33 bytes at offset 9
//	02 00 00 00                          2 elements
//	00                                   null bitmap of the elements
//	61 00 00 00 00 00 00 81              element 0: "a", inline
//	11 00 00 00 0c 00 00 00              element 1: 12 bytes at offset 17 of the block
//	68 65 6c 6c 6f 2c 20 77 6f 72 6c 64  "hello, world"
//
// An empty array is its 4-byte count alone, inline in its slot; a MAP
// payload starts with 00 (no null) and the slots of its keys and values
// arrays.

package record

import (
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
)

// MaxRowBytes is the largest encoded row.
const MaxRowBytes = 1<<31 - 1

const (
	slotBytes        = 8
	maxInlinePayload = 7
	inlineFlag       = 1 << 63
	// timestampPayloadBytes is the size of a TIMESTAMP payload of precision
	// above 6: int64 epoch milliseconds and int32 nanoseconds of millisecond.
	timestampPayloadBytes = 12

	canonicalNaN32 = 0x7fc00000
	canonicalNaN64 = 0x7ff8000000000000
)

// bitmapBytes returns the size of the null bitmap of n columns.
func bitmapBytes(n int) int { return (n + 7) / 8 }

// fixedEnd returns the offset where the variable part of a row of n columns
// starts.
func fixedEnd(n int) int { return bitmapBytes(n) + slotBytes*n }

// RowView reads the fields of an encoded row in place.
//
// A RowView is a small value over the row bytes and the schema's columns; it
// copies nothing. Getters take 0-based column indexes and panic on an index
// out of range. Each getter is meant for the column types its documentation
// lists; on other columns, null columns or rows that ValidateRow rejects,
// getters return unspecified values but never panic. Byte slices returned by
// getters alias the row: they are valid while the row bytes are unchanged,
// and callers must not modify them.
type RowView struct {
	// columns are a row's columns, or the element column alone of the
	// elements of an array (ArrayView): value i is of column
	// columns[min(i, len(columns)-1)].
	columns []Column
	length  int // values: len(columns) for a row, the element count for an array
	data    []byte
}

// NewRowView returns a view of the row data encoded under s. It does not
// check the row: call ValidateRow first for rows of untrusted origin. The view
// reads s.Columns, which must not change while the view is used.
func NewRowView(s Schema, data []byte) RowView {
	return RowView{columns: s.Columns, length: len(s.Columns), data: data}
}

// Data returns the row bytes.
func (v RowView) Data() []byte { return v.data }

// NumColumns returns the number of columns of the schema (of the fields of
// a ROW value).
func (v RowView) NumColumns() int { return v.length }

// checkIndex panics if i is not a column index.
func (v RowView) checkIndex(i int) {
	if uint(i) >= uint(v.length) {
		panic("record: column index " + strconv.Itoa(i) + " out of range for " + strconv.Itoa(v.length) + " columns")
	}
}

// column returns the column of value i, an index checked.
func (v RowView) column(i int) *Column { return &v.columns[min(i, len(v.columns)-1)] }

// IsNull reports whether column i is null.
func (v RowView) IsNull(i int) bool {
	v.checkIndex(i)
	if i/8 >= len(v.data) {
		return true
	}
	return v.data[i/8]&(1<<(i%8)) != 0
}

// slotOffset returns the offset of the slot of column i.
func (v RowView) slotOffset(i int) int {
	return bitmapBytes(v.length) + slotBytes*i
}

// slot returns the 8 bytes of the slot of column i as a uint64.
func (v RowView) slot(i int) uint64 {
	v.checkIndex(i)
	off := v.slotOffset(i)
	if off+slotBytes > len(v.data) {
		return 0
	}
	return binary.LittleEndian.Uint64(v.data[off:])
}

// payload returns the variable-length payload of column i, inline or not, or
// nil if its reference points outside the row.
func (v RowView) payload(i int) []byte {
	s := v.slot(i)
	if s&inlineFlag != 0 {
		n := int(s >> 56 & 0x7f)
		if n > maxInlinePayload {
			return nil
		}
		off := v.slotOffset(i)
		return v.data[off : off+n : off+n]
	}
	off, n := uint64(uint32(s)), uint64(s>>32)
	if off+n > uint64(len(v.data)) {
		return nil
	}
	return v.data[off : off+n : off+n]
}

// Bool returns the value of a BOOLEAN column.
func (v RowView) Bool(i int) bool { return v.slot(i) != 0 }

// Int64 returns the value of a TINYINT, SMALLINT, INT or BIGINT column, the
// days since 1970-01-01 of a DATE column, or the milliseconds since midnight
// of a TIME column.
func (v RowView) Int64(i int) int64 { return int64(v.slot(i)) }

// Float32 returns the value of a FLOAT column.
func (v RowView) Float32(i int) float32 { return math.Float32frombits(uint32(v.slot(i))) }

// Float64 returns the value of a DOUBLE column.
func (v RowView) Float64(i int) float64 { return math.Float64frombits(v.slot(i)) }

// String returns the value of a STRING column as a new string.
// StringBytes returns it without copying.
func (v RowView) String(i int) string { return string(v.payload(i)) }

// StringBytes returns the UTF-8 bytes of a STRING column, aliasing the row.
func (v RowView) StringBytes(i int) []byte { return v.payload(i) }

// Bytes returns the value of a BYTES column, aliasing the row.
func (v RowView) Bytes(i int) []byte { return v.payload(i) }

// Timestamp returns the value of a TIMESTAMP or TIMESTAMP_LTZ column as
// milliseconds since 1970-01-01T00:00:00 (UTC for TIMESTAMP_LTZ) and the
// nanoseconds within that millisecond, 0 to 999,999.
func (v RowView) Timestamp(i int) (millis int64, nanosOfMilli int32) {
	v.checkIndex(i)
	if v.column(i).Type.precision <= MaxCompactTimestampPrecision {
		millis, micros := floorDivMod(int64(v.slot(i)), 1000)
		return millis, int32(micros * 1000)
	}
	p := v.payload(i)
	if len(p) != timestampPayloadBytes {
		return 0, 0
	}
	return int64(binary.LittleEndian.Uint64(p)), int32(binary.LittleEndian.Uint32(p[8:]))
}

// decimal returns the unscaled value of a DECIMAL column as sign and
// magnitude.
func (v RowView) decimal(i int) (neg bool, mag uint128, ok bool) {
	v.checkIndex(i)
	if v.column(i).Type.precision <= MaxCompactDecimalPrecision {
		neg, mag = magnitudeOfInt64(int64(v.slot(i)))
		return neg, mag, true
	}
	return decodeTwos(v.payload(i))
}

// DecimalInt64 returns the unscaled value of a DECIMAL column (the value
// times 10^scale) if it fits an int64, which it always does for precision up
// to 18.
func (v RowView) DecimalInt64(i int) (unscaled int64, ok bool) {
	neg, mag, ok := v.decimal(i)
	if !ok {
		return 0, false
	}
	return int64OfMagnitude(neg, mag)
}

// AppendDecimalBytes appends the unscaled value of a DECIMAL column to dst as
// big-endian two's complement of minimal length, the form of Java's
// BigInteger.toByteArray.
func (v RowView) AppendDecimalBytes(dst []byte, i int) []byte {
	neg, mag, _ := v.decimal(i)
	return appendTwos(dst, neg, mag)
}

// DecimalBig returns the unscaled value of a DECIMAL column as a new big.Int.
func (v RowView) DecimalBig(i int) *big.Int {
	neg, mag, _ := v.decimal(i)
	return bigOfMagnitude(neg, mag)
}
