package record

import "strconv"

// Kind is the type family of a column, without parameters.
//
// The numeric values are part of the schema encoding (see
// Schema.MarshalBinary): they never change and are never reused.
type Kind uint8

// The column type families.
const (
	KindInvalid      Kind = 0  // the zero Kind; no column has it
	KindBoolean      Kind = 1  // BOOLEAN
	KindTinyInt      Kind = 2  // TINYINT: 8-bit signed integer
	KindSmallInt     Kind = 3  // SMALLINT: 16-bit signed integer
	KindInt          Kind = 4  // INT: 32-bit signed integer
	KindBigInt       Kind = 5  // BIGINT: 64-bit signed integer
	KindFloat        Kind = 6  // FLOAT: IEEE-754 binary32
	KindDouble       Kind = 7  // DOUBLE: IEEE-754 binary64
	KindDecimal      Kind = 8  // DECIMAL(p,s): exact decimal
	KindString       Kind = 9  // STRING: UTF-8 text
	KindBytes        Kind = 10 // BYTES: binary string
	KindDate         Kind = 11 // DATE: day of the proleptic Gregorian calendar
	KindTime         Kind = 12 // TIME: time of day, milliseconds
	KindTimestamp    Kind = 13 // TIMESTAMP(p): date and time without time zone
	KindTimestampLTZ Kind = 14 // TIMESTAMP_LTZ(p): instant on the UTC time line

	kindCount Kind = 15 // one past the last valid Kind
)

// Limits and defaults of type parameters, as in Flink and Fluss.
const (
	// MaxDecimalPrecision is the largest precision of a DECIMAL.
	MaxDecimalPrecision = 38
	// MaxCompactDecimalPrecision is the largest DECIMAL precision whose
	// unscaled values always fit an int64; such decimals are fixed-width.
	MaxCompactDecimalPrecision = 18
	// DefaultDecimalPrecision and DefaultDecimalScale are those of a DECIMAL
	// written without parameters.
	DefaultDecimalPrecision = 10
	DefaultDecimalScale     = 0

	// MaxTimestampPrecision is the largest number of fractional second digits
	// of a TIMESTAMP or TIMESTAMP_LTZ.
	MaxTimestampPrecision = 9
	// MaxCompactTimestampPrecision is the largest TIMESTAMP precision whose
	// values are stored in 8 bytes (microseconds since the epoch); such
	// timestamps are fixed-width.
	MaxCompactTimestampPrecision = 6
	// DefaultTimestampPrecision is the precision of a TIMESTAMP or
	// TIMESTAMP_LTZ written without one.
	DefaultTimestampPrecision = 6
)

// String returns the SQL name of the kind, such as "BIGINT" or
// "TIMESTAMP_LTZ", or "INVALID".
func (k Kind) String() string {
	switch k {
	case KindBoolean:
		return "BOOLEAN"
	case KindTinyInt:
		return "TINYINT"
	case KindSmallInt:
		return "SMALLINT"
	case KindInt:
		return "INT"
	case KindBigInt:
		return "BIGINT"
	case KindFloat:
		return "FLOAT"
	case KindDouble:
		return "DOUBLE"
	case KindDecimal:
		return "DECIMAL"
	case KindString:
		return "STRING"
	case KindBytes:
		return "BYTES"
	case KindDate:
		return "DATE"
	case KindTime:
		return "TIME"
	case KindTimestamp:
		return "TIMESTAMP"
	case KindTimestampLTZ:
		return "TIMESTAMP_LTZ"
	default:
		return "INVALID"
	}
}

// DataType is a column type: a Kind plus the precision and scale of
// DECIMAL(p,s) and the precision of TIMESTAMP(p) and TIMESTAMP_LTZ(p).
//
// DataType values are comparable with ==. The zero DataType is invalid; make
// them with the constructors (BigInt, Decimal, ...) or ParseType. The
// constructors do not check their parameters: Validate (or Schema.Validate)
// does.
type DataType struct {
	kind      Kind
	precision int
	scale     int
}

// Boolean returns the BOOLEAN type.
func Boolean() DataType { return DataType{kind: KindBoolean} }

// TinyInt returns the TINYINT type.
func TinyInt() DataType { return DataType{kind: KindTinyInt} }

// SmallInt returns the SMALLINT type.
func SmallInt() DataType { return DataType{kind: KindSmallInt} }

// Int returns the INT type.
func Int() DataType { return DataType{kind: KindInt} }

// BigInt returns the BIGINT type.
func BigInt() DataType { return DataType{kind: KindBigInt} }

// Float returns the FLOAT type (binary32).
func Float() DataType { return DataType{kind: KindFloat} }

// Double returns the DOUBLE type (binary64).
func Double() DataType { return DataType{kind: KindDouble} }

// Decimal returns the DECIMAL(precision, scale) type. Valid parameters are
// 1 ≤ precision ≤ 38 and 0 ≤ scale ≤ precision.
func Decimal(precision, scale int) DataType {
	return DataType{kind: KindDecimal, precision: precision, scale: scale}
}

// String returns the STRING type.
func String() DataType { return DataType{kind: KindString} }

// Bytes returns the BYTES type.
func Bytes() DataType { return DataType{kind: KindBytes} }

// Date returns the DATE type.
func Date() DataType { return DataType{kind: KindDate} }

// Time returns the TIME type (millisecond precision).
func Time() DataType { return DataType{kind: KindTime} }

// Timestamp returns the TIMESTAMP(precision) type. Valid precisions are 0 to
// 9; DefaultTimestampPrecision is 6.
func Timestamp(precision int) DataType {
	return DataType{kind: KindTimestamp, precision: precision}
}

// TimestampLTZ returns the TIMESTAMP_LTZ(precision) type. Valid precisions are
// 0 to 9; DefaultTimestampPrecision is 6.
func TimestampLTZ(precision int) DataType {
	return DataType{kind: KindTimestampLTZ, precision: precision}
}

// Kind returns the type family.
func (t DataType) Kind() Kind { return t.kind }

// Precision returns p of DECIMAL(p,s), TIMESTAMP(p) and TIMESTAMP_LTZ(p), and
// 0 for other types.
func (t DataType) Precision() int { return t.precision }

// Scale returns s of DECIMAL(p,s), and 0 for other types.
func (t DataType) Scale() int { return t.scale }

// IsFixedWidth reports whether every value of the type is stored inside its
// 8-byte slot of the row's fixed part: true for all types except STRING,
// BYTES, DECIMAL with precision above 18, and TIMESTAMP and TIMESTAMP_LTZ with
// precision above 6. Values of the other types are variable-length payloads
// (see the row layout in row.go).
func (t DataType) IsFixedWidth() bool {
	switch t.kind {
	case KindString, KindBytes:
		return false
	case KindDecimal:
		return t.precision <= MaxCompactDecimalPrecision
	case KindTimestamp, KindTimestampLTZ:
		return t.precision <= MaxCompactTimestampPrecision
	default:
		return true
	}
}

// String returns the canonical SQL form of the type, such as "BIGINT",
// "DECIMAL(10,2)" or "TIMESTAMP(6)". Parameters are always written out.
func (t DataType) String() string {
	switch t.kind {
	case KindDecimal:
		return "DECIMAL(" + strconv.Itoa(t.precision) + "," + strconv.Itoa(t.scale) + ")"
	case KindTimestamp, KindTimestampLTZ:
		return t.kind.String() + "(" + strconv.Itoa(t.precision) + ")"
	default:
		return t.kind.String()
	}
}

// Validate reports whether t is a usable column type, with an error matching
// ErrInvalidSchema if not.
func (t DataType) Validate() error {
	if msg := t.problem(); msg != "" {
		return newSchemaError(msg)
	}
	return nil
}

// problem describes what is wrong with t, or returns "" when t is valid.
func (t DataType) problem() string {
	switch t.kind {
	case KindDecimal:
		if t.precision < 1 || t.precision > MaxDecimalPrecision {
			return "DECIMAL precision " + strconv.Itoa(t.precision) + " out of range [1, 38]"
		}
		if t.scale < 0 || t.scale > t.precision {
			return "DECIMAL scale " + strconv.Itoa(t.scale) + " out of range [0, " + strconv.Itoa(t.precision) + "]"
		}
		return ""
	case KindTimestamp, KindTimestampLTZ:
		if t.precision < 0 || t.precision > MaxTimestampPrecision {
			return t.kind.String() + " precision " + strconv.Itoa(t.precision) + " out of range [0, 9]"
		}
		if t.scale != 0 {
			return t.kind.String() + " has no scale"
		}
		return ""
	case KindInvalid:
		return "invalid type"
	default:
		if t.kind >= kindCount {
			return "unknown type kind " + strconv.Itoa(int(t.kind))
		}
		if t.precision != 0 || t.scale != 0 {
			return t.kind.String() + " takes no parameters"
		}
		return ""
	}
}

// MarshalText returns t.String(), or an error for an invalid type.
func (t DataType) MarshalText() ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return []byte(t.String()), nil
}

// UnmarshalText parses a type with ParseType.
func (t *DataType) UnmarshalText(text []byte) error {
	parsed, err := ParseType(string(text))
	if err != nil {
		return err
	}
	*t = parsed
	return nil
}

// intRange returns the bounds of the int64 values stored by SetInt64 for an
// integer, DATE or TIME kind, and ok=false for other kinds.
func intRange(k Kind) (lo, hi int64, ok bool) {
	switch k {
	case KindTinyInt:
		return -1 << 7, 1<<7 - 1, true
	case KindSmallInt:
		return -1 << 15, 1<<15 - 1, true
	case KindInt:
		return -1 << 31, 1<<31 - 1, true
	case KindBigInt:
		return -1 << 63, 1<<63 - 1, true
	case KindDate:
		return minDateDays, maxDateDays, true
	case KindTime:
		return 0, millisPerDay - 1, true
	default:
		return 0, 0, false
	}
}
