package record

import (
	"encoding/binary"
	"strconv"

	"github.com/floedb/floe/internal/pkgerr"
)

// ErrBadProjection marks a projection ProjectRow cannot make.
var ErrBadProjection = pkgerr.New("record", "bad projection")

// ProjectRow appends to dst the row, a valid row of from, cut to some of
// its columns: column j of the result is column columns[j] of from, or
// null where columns[j] is -1 (a column the row's schema version does not
// have). The result is a valid row of the schema those columns make, with
// the nullability of from's (and nullable where -1), and is built at the
// layout level: slots are copied and out-of-line payloads moved, no value
// is decoded.
func ProjectRow(from Schema, row []byte, columns []int, dst []byte) ([]byte, error) {
	n, m := len(from.Columns), len(columns)
	if len(row) < fixedEnd(n) {
		return dst, pkgerr.Errorf("record", "%w: row of %d bytes is shorter than the %d of %d columns", ErrBadProjection,
			len(row), fixedEnd(n), n)
	}
	start := len(dst)
	dst = append(dst, make([]byte, fixedEnd(m))...)
	varAt := fixedEnd(m)
	for j, c := range columns {
		switch {
		case c == -1:
			dst[start+j/8] |= 1 << (j % 8)
			continue
		case c < 0 || c >= n:
			return dst[:start], pkgerr.Errorf("record", "%w: column index %d of %d columns", ErrBadProjection, c, n)
		}
		if row[c/8]&(1<<(c%8)) != 0 {
			dst[start+j/8] |= 1 << (j % 8)
			continue
		}
		slot := binary.LittleEndian.Uint64(row[bitmapBytes(n)+slotBytes*c:])
		at := start + bitmapBytes(m) + slotBytes*j
		if from.Columns[c].Type.IsFixedWidth() || slot&inlineFlag != 0 {
			binary.LittleEndian.PutUint64(dst[at:], slot)
			continue
		}
		off, size := int(uint32(slot)), int(uint32(slot>>32))
		if off < fixedEnd(n) || off+size > len(row) {
			return dst[:start], pkgerr.Errorf("record", "%w: %s: payload [%d, %d) outside the row of %s bytes", ErrBadProjection,
				columnRef(c, from.Columns[c].Name), off, off+size, strconv.Itoa(len(row)))
		}
		binary.LittleEndian.PutUint64(dst[at:], uint64(uint32(varAt))|uint64(size)<<32)
		dst = append(dst, row[off:off+size]...)
		varAt += size
	}
	return dst, nil
}
