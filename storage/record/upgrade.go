package record

import (
	"encoding/binary"

	"github.com/floedb/floe/internal/pkgerr"
)

// Schema versions
//
// ALTER TABLE adds nullable columns at the end of a schema and never
// rewrites a stored row, so a table holds rows of every schema version it
// had. A row of n columns becomes a row of m > n columns (the new ones
// null) by widening its null bitmap, appending m-n zero slots and moving
// its out-of-line payloads, and their references, by the growth of the
// fixed part; it becomes a row of m < n columns by dropping the last
// columns, their slots and their payloads (which are the last ones, in
// column order). Both give the canonical row of the other schema, so the
// result passes ValidateRow whenever the input did.

// ErrSchemaMismatch marks a conversion between schemas that are not
// versions of one table (one is not the other with nullable columns added
// at the end), or a row that is no valid row of the schema it is said to
// be of.
var ErrSchemaMismatch = pkgerr.New("record", "schema versions do not match")

// UpgradeRow appends to dst the row, encoded under from, re-encoded under
// to, which must be from with nullable columns added at the end: the added
// columns are null. The row must be valid under from (ValidateRow); it is
// not checked again.
func UpgradeRow(from, to Schema, row, dst []byte) ([]byte, error) {
	if err := extends(from, to); err != nil {
		return dst, err
	}
	return convertRow(from, len(to.Columns), row, dst)
}

// ConvertRow appends to dst the row, encoded under from, re-encoded under
// to, where one of the two extends the other with nullable columns at the
// end: columns to has and from lacks are null, columns from has and to
// lacks are dropped. A reader whose schema is older than a row's sees the
// columns it knows. Equal schemas copy the row.
func ConvertRow(from, to Schema, row, dst []byte) ([]byte, error) {
	if len(to.Columns) >= len(from.Columns) {
		return UpgradeRow(from, to, row, dst)
	}
	if err := extends(to, from); err != nil {
		return dst, err
	}
	return convertRow(from, len(to.Columns), row, dst)
}

// extends checks that to is from with nullable columns added at the end.
func extends(from, to Schema) error {
	if len(to.Columns) < len(from.Columns) {
		return pkgerr.Errorf("record", "%w: %d columns cannot become %d", ErrSchemaMismatch, len(from.Columns), len(to.Columns))
	}
	for i, c := range from.Columns {
		if t := to.Columns[i]; !t.Equal(c) {
			return pkgerr.Errorf("record", "%w: %s differs", ErrSchemaMismatch, columnRef(i, c.Name))
		}
	}
	for i := len(from.Columns); i < len(to.Columns); i++ {
		if !to.Columns[i].Nullable {
			return pkgerr.Errorf("record", "%w: added %s is NOT NULL", ErrSchemaMismatch, columnRef(i, to.Columns[i].Name))
		}
	}
	return nil
}

// convertRow re-encodes a valid row of from as a row of the first m
// columns of from, or of from and m-n null columns after them.
func convertRow(from Schema, m int, row, dst []byte) ([]byte, error) {
	n := len(from.Columns)
	if len(row) < fixedEnd(n) {
		return dst, pkgerr.Errorf("record", "%w: row of %d bytes is shorter than the %d of %d columns", ErrSchemaMismatch,
			len(row), fixedEnd(n), n)
	}
	kept := min(n, m)
	// Out-of-line payloads of the kept columns are the first ones of the
	// variable part, in column order: they end where the first payload of
	// a dropped column starts, or at the row's end.
	varEnd := len(row)
	for i := kept; i < n; i++ {
		if off, ok := outOfLine(from, row, i); ok {
			varEnd = off
			break
		}
	}
	shift := fixedEnd(m) - fixedEnd(n)
	start := len(dst)
	dst = append(dst, make([]byte, fixedEnd(m))...)
	out := dst[start:]
	for i := range kept {
		if row[i/8]&(1<<(i%8)) != 0 {
			out[i/8] |= 1 << (i % 8)
		}
	}
	for i := kept; i < m; i++ {
		out[i/8] |= 1 << (i % 8)
	}
	slots := out[bitmapBytes(m):]
	copy(slots, row[bitmapBytes(n):bitmapBytes(n)+slotBytes*kept])
	for i := range kept {
		if off, ok := outOfLine(from, row, i); ok {
			s := binary.LittleEndian.Uint64(slots[slotBytes*i:])
			if off+shift < 0 {
				return dst[:start], pkgerr.Errorf("record", "%w: %s: payload at offset %d", ErrSchemaMismatch, columnRef(i, from.Columns[i].Name), off)
			}
			s = s&^0xffffffff | uint64(uint32(off+shift))
			binary.LittleEndian.PutUint64(slots[slotBytes*i:], s)
		}
	}
	if varEnd < fixedEnd(n) {
		return dst[:start], pkgerr.Errorf("record", "%w: payloads start at %d, inside the fixed part", ErrSchemaMismatch, varEnd)
	}
	return append(dst, row[fixedEnd(n):varEnd]...), nil
}

// outOfLine returns the offset of column i's payload when it lives in the
// variable part of row (a valid row of s).
func outOfLine(s Schema, row []byte, i int) (int, bool) {
	if s.Columns[i].Type.IsFixedWidth() || row[i/8]&(1<<(i%8)) != 0 {
		return 0, false
	}
	slot := binary.LittleEndian.Uint64(row[bitmapBytes(len(s.Columns))+slotBytes*i:])
	if slot&inlineFlag != 0 {
		return 0, false
	}
	return int(uint32(slot)), true
}
