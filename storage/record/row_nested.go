package record

import (
	"encoding/binary"
	"math/big"
	"strconv"
)

// Nested values (ARRAY, MAP, ROW) are payloads laid out as rows; see the
// layout at the top of row.go.

const (
	// arrayCountBytes is the size of the element count that starts an ARRAY
	// payload.
	arrayCountBytes = 4
	// mapHeadBytes is the size of the bitmap and two slots that start a MAP
	// payload: a row of its keys array and its values array.
	mapHeadBytes = 1 + 2*slotBytes
)

// splitArray returns the element count and the element block of an ARRAY
// payload, or ok=false when p is too short for its count: every element
// takes at least its 8-byte slot, so a hostile count is refused before
// anything is sized by it.
func splitArray(p []byte) (n int, block []byte, ok bool) {
	if len(p) < arrayCountBytes {
		return 0, nil, false
	}
	count := uint64(binary.LittleEndian.Uint32(p))
	block = p[arrayCountBytes:]
	if count > uint64(len(block)/slotBytes) {
		return 0, nil, false
	}
	return int(count), block, true
}

// arrayView is the view of an ARRAY payload of element column elem (a
// one-column slice); an empty view if the payload is malformed.
func arrayView(elem []Column, p []byte) ArrayView {
	n, block, ok := splitArray(p)
	if !ok || len(elem) != 1 {
		return ArrayView{}
	}
	return ArrayView{v: RowView{columns: elem, length: n, data: block}}
}

// Array returns the value of an ARRAY column as a view over the row.
func (v RowView) Array(i int) ArrayView {
	v.checkIndex(i)
	return arrayView(v.column(i).Type.children, v.payload(i))
}

// Map returns the value of a MAP column as a view over the row.
func (v RowView) Map(i int) MapView {
	v.checkIndex(i)
	return mapView(v.column(i).Type.children, v.payload(i))
}

// Row returns the value of a ROW column: a view of its fields, read with the
// same getters as a row's columns.
func (v RowView) Row(i int) RowView {
	v.checkIndex(i)
	fields := v.column(i).Type.children
	return RowView{columns: fields, length: len(fields), data: v.payload(i)}
}

// mapView is the view of a MAP payload whose type has the children key and
// value; an empty view if the payload is malformed.
func mapView(keyValue []Column, p []byte) MapView {
	if len(keyValue) != 2 || len(p) < mapHeadBytes {
		return MapView{}
	}
	head := RowView{columns: keyValue, length: 2, data: p}
	return MapView{keys: arrayView(keyValue[:1], head.payload(0)), values: arrayView(keyValue[1:], head.payload(1))}
}

// ArrayView reads the elements of an ARRAY value in place. It has the
// getters of RowView, taking 0-based element indexes, with the same rules:
// they panic on an index out of range, return unspecified values but never
// panic on the wrong type or an invalid row, and byte slices alias the row.
type ArrayView struct {
	v RowView
}

// Len returns the number of elements.
func (a ArrayView) Len() int { return a.v.length }

// IsNull reports whether element j is null.
func (a ArrayView) IsNull(j int) bool { return a.v.IsNull(j) }

// Bool returns a BOOLEAN element.
func (a ArrayView) Bool(j int) bool { return a.v.Bool(j) }

// Int64 returns a TINYINT, SMALLINT, INT, BIGINT, DATE or TIME element, as
// RowView.Int64.
func (a ArrayView) Int64(j int) int64 { return a.v.Int64(j) }

// Float32 returns a FLOAT element.
func (a ArrayView) Float32(j int) float32 { return a.v.Float32(j) }

// Float64 returns a DOUBLE element.
func (a ArrayView) Float64(j int) float64 { return a.v.Float64(j) }

// String returns a STRING element as a new string.
func (a ArrayView) String(j int) string { return a.v.String(j) }

// StringBytes returns the UTF-8 bytes of a STRING element, aliasing the row.
func (a ArrayView) StringBytes(j int) []byte { return a.v.StringBytes(j) }

// Bytes returns a BYTES element, aliasing the row.
func (a ArrayView) Bytes(j int) []byte { return a.v.Bytes(j) }

// Timestamp returns a TIMESTAMP or TIMESTAMP_LTZ element, as
// RowView.Timestamp.
func (a ArrayView) Timestamp(j int) (millis int64, nanosOfMilli int32) { return a.v.Timestamp(j) }

// DecimalInt64 returns the unscaled value of a DECIMAL element if it fits an
// int64, as RowView.DecimalInt64.
func (a ArrayView) DecimalInt64(j int) (unscaled int64, ok bool) { return a.v.DecimalInt64(j) }

// AppendDecimalBytes appends the unscaled value of a DECIMAL element to dst,
// as RowView.AppendDecimalBytes.
func (a ArrayView) AppendDecimalBytes(dst []byte, j int) []byte {
	return a.v.AppendDecimalBytes(dst, j)
}

// DecimalBig returns the unscaled value of a DECIMAL element as a new
// big.Int.
func (a ArrayView) DecimalBig(j int) *big.Int { return a.v.DecimalBig(j) }

// Array returns an ARRAY element.
func (a ArrayView) Array(j int) ArrayView { return a.v.Array(j) }

// Map returns a MAP element.
func (a ArrayView) Map(j int) MapView { return a.v.Map(j) }

// Row returns a ROW element.
func (a ArrayView) Row(j int) RowView { return a.v.Row(j) }

// MapView reads the entries of a MAP value in place: entry j is key
// Keys() element j and value Values() element j, in the order they were
// written. Keys are distinct and never null.
type MapView struct {
	keys, values ArrayView
}

// Len returns the number of entries.
func (m MapView) Len() int { return m.keys.Len() }

// Keys returns the keys, in entry order.
func (m MapView) Keys() ArrayView { return m.keys }

// Values returns the values, in entry order.
func (m MapView) Values() ArrayView { return m.values }

// Nested returns the encoded value of ARRAY, MAP or ROW column i, as
// RowEncoder.SetNested takes it: a row is copied column by column without
// decoding its nested values.
func (v RowView) Nested(i int) []byte { return v.payload(i) }

// valueBytes returns the bytes that stand for value i of a valid block: its
// slot for a fixed-width type, its payload otherwise. The encoding being
// canonical, two values are equal (floats bit for bit) exactly when these
// bytes are.
func (v RowView) valueBytes(i int) []byte {
	if v.column(i).Type.IsFixedWidth() {
		off := v.slotOffset(i)
		return v.data[off : off+slotBytes]
	}
	return v.payload(i)
}

// duplicateKey returns the indexes i < j of the first key equal to an
// earlier one of a valid keys block, or -1, -1. Few keys are compared
// pairwise, without allocating.
func duplicateKey(keys RowView) (i, j int) {
	const pairwiseMax = 32
	if keys.length <= pairwiseMax {
		for j := range keys.length {
			for i := range j {
				if string(keys.valueBytes(i)) == string(keys.valueBytes(j)) {
					return i, j
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, keys.length)
	for j := range keys.length {
		b := keys.valueBytes(j)
		if i, dup := seen[string(b)]; dup {
			return i, j
		}
		seen[string(b)] = j
	}
	return -1, -1
}

// elementStep is the path step to element j: "[j]".
func elementStep(j int) string { return "[" + strconv.Itoa(j) + "]" }
