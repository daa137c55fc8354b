package kvstore

import (
	"github.com/floedb/floe/storage/record"
)

// copyField sets column i of enc to the value of column i of v, which must
// be a row of the encoder's schema. A null value leaves the column unset,
// which Finish turns into a null (or an error for a NOT NULL column).
func copyField(enc *record.RowEncoder, v record.RowView, col record.Column, i int) {
	if v.IsNull(i) {
		return
	}
	switch col.Type.Kind() {
	case record.KindBoolean:
		enc.SetBool(i, v.Bool(i))
	case record.KindTinyInt, record.KindSmallInt, record.KindInt, record.KindBigInt,
		record.KindDate, record.KindTime:
		enc.SetInt64(i, v.Int64(i))
	case record.KindFloat:
		enc.SetFloat32(i, v.Float32(i))
	case record.KindDouble:
		enc.SetFloat64(i, v.Float64(i))
	case record.KindDecimal:
		if col.Type.Precision() <= record.MaxCompactDecimalPrecision {
			unscaled, _ := v.DecimalInt64(i)
			enc.SetDecimal(i, unscaled)
		} else {
			enc.SetDecimalBytes(i, v.AppendDecimalBytes(nil, i))
		}
	case record.KindString:
		enc.SetStringBytes(i, v.StringBytes(i))
	case record.KindBytes:
		enc.SetBytes(i, v.Bytes(i))
	case record.KindTimestamp, record.KindTimestampLTZ:
		millis, nanos := v.Timestamp(i)
		enc.SetTimestamp(i, millis, nanos)
	case record.KindArray, record.KindMap, record.KindRow:
		enc.SetNested(i, v.Nested(i))
	default:
		// A kind this copy does not know would leave the column null: the
		// encoder's Finish reports it instead.
		enc.SetNested(i, nil)
	}
}
