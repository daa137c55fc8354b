package record

import (
	"slices"
	"strconv"
	"strings"
)

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
	KindArray        Kind = 15 // ARRAY<T>: a list of values of one type
	KindMap          Kind = 16 // MAP<K, V>: a list of entries with distinct keys
	KindRow          Kind = 17 // ROW<name T, ...>: named fields, like a row

	kindCount Kind = 18 // one past the last valid Kind
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

	// MaxNestingDepth is the deepest nesting of ARRAY, MAP and ROW types:
	// ARRAY<INT> has depth 1, ARRAY<ROW<a ARRAY<INT>>> depth 3. It bounds
	// the recursion of every function that walks a type or a nested value.
	MaxNestingDepth = 16
)

// Names of the columns that describe the children of ARRAY and MAP types
// (DataType.Elem, MapKey and MapValue).
const (
	elemName  = "element"
	keyName   = "key"
	valueName = "value"
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
	case KindArray:
		return "ARRAY"
	case KindMap:
		return "MAP"
	case KindRow:
		return "ROW"
	default:
		return "INVALID"
	}
}

// DataType is a column type: a Kind plus the precision and scale of
// DECIMAL(p,s), the precision of TIMESTAMP(p) and TIMESTAMP_LTZ(p), and the
// children of the nested types ARRAY, MAP and ROW.
//
// Compare DataType values with Equal: they hold slices, so == does not
// compile. The zero DataType is invalid; make them with the constructors
// (BigInt, Decimal, Array, ...) or ParseType. The constructors do not check
// their parameters: Validate (or Schema.Validate) does. A DataType is
// immutable: the nested constructors copy what they are given, and
// accessors return what callers must not modify.
type DataType struct {
	_         [0]func() // not comparable: == would compare children by pointer
	kind      Kind
	precision int
	scale     int
	// children are the element of an ARRAY, the key and value of a MAP and
	// the fields of a ROW, as columns; nil for other kinds.
	children []Column
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

// Array returns the ARRAY<elem> type, whose elements may be null when
// elemNullable is set.
func Array(elem DataType, elemNullable bool) DataType {
	return DataType{kind: KindArray, children: []Column{{Name: elemName, Type: elem, Nullable: elemNullable}}}
}

// Map returns the MAP<key, value> type. Keys are never null and must be of
// a type that is not nested; values may be null when valueNullable is set.
func Map(key, value DataType, valueNullable bool) DataType {
	return DataType{kind: KindMap, children: []Column{
		{Name: keyName, Type: key},
		{Name: valueName, Type: value, Nullable: valueNullable},
	}}
}

// Row returns the ROW type of the given fields, which it copies. Field names
// follow the column name rule (ValidName) and are distinct; each field says
// whether it takes nulls.
func Row(fields []Column) DataType {
	return DataType{kind: KindRow, children: slices.Clone(fields)}
}

// Elem returns the element of an ARRAY type, a column named "element", and
// the zero Column for other types.
func (t DataType) Elem() Column {
	if t.kind != KindArray || len(t.children) != 1 {
		return Column{}
	}
	return t.children[0]
}

// MapKey returns the key of a MAP type, a NOT NULL column named "key", and
// the zero Column for other types.
func (t DataType) MapKey() Column {
	if t.kind != KindMap || len(t.children) != 2 {
		return Column{}
	}
	return t.children[0]
}

// MapValue returns the value of a MAP type, a column named "value", and the
// zero Column for other types.
func (t DataType) MapValue() Column {
	if t.kind != KindMap || len(t.children) != 2 {
		return Column{}
	}
	return t.children[1]
}

// Fields returns the fields of a ROW type, and nil for other types. Callers
// must not modify the result.
func (t DataType) Fields() []Column {
	if t.kind != KindRow {
		return nil
	}
	return t.children
}

// IsNested reports whether t is an ARRAY, MAP or ROW type.
func (t DataType) IsNested() bool {
	return t.kind == KindArray || t.kind == KindMap || t.kind == KindRow
}

// Equal reports whether t and o are the same type, comparing nested types
// deeply: field names, nullability and types.
func (t DataType) Equal(o DataType) bool {
	return t.kind == o.kind && t.precision == o.precision && t.scale == o.scale &&
		slices.EqualFunc(t.children, o.children, Column.Equal)
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
// BYTES, ARRAY, MAP, ROW, DECIMAL with precision above 18, and TIMESTAMP and TIMESTAMP_LTZ with
// precision above 6. Values of the other types are variable-length payloads
// (see the row layout in row.go).
func (t DataType) IsFixedWidth() bool {
	switch t.kind {
	case KindString, KindBytes, KindArray, KindMap, KindRow:
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
// "DECIMAL(10,2)", "TIMESTAMP(6)", "ARRAY<INT NOT NULL>", "MAP<STRING,
// BIGINT>" or "ROW<a INT, b STRING NOT NULL>". Parameters are always
// written out; an element, map value or field is nullable unless it says
// NOT NULL, as columns are, and a map key, never null, says nothing.
func (t DataType) String() string {
	if !t.IsNested() {
		return t.flatString()
	}
	var b strings.Builder
	t.appendString(&b)
	return b.String()
}

func (t DataType) flatString() string {
	switch t.kind {
	case KindDecimal:
		return "DECIMAL(" + strconv.Itoa(t.precision) + "," + strconv.Itoa(t.scale) + ")"
	case KindTimestamp, KindTimestampLTZ:
		return t.kind.String() + "(" + strconv.Itoa(t.precision) + ")"
	default:
		return t.kind.String()
	}
}

func (t DataType) appendString(b *strings.Builder) {
	if !t.IsNested() {
		b.WriteString(t.flatString())
		return
	}
	b.WriteString(t.kind.String())
	b.WriteByte('<')
	for i, c := range t.children {
		if i > 0 {
			b.WriteString(", ")
		}
		if t.kind == KindRow {
			b.WriteString(c.Name)
			b.WriteByte(' ')
		}
		c.Type.appendString(b)
		if !c.Nullable && !(t.kind == KindMap && i == 0) {
			b.WriteString(" NOT NULL")
		}
	}
	b.WriteByte('>')
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
	fields := 0
	return t.problemAt(1, &fields)
}

// problemAt is problem for a type at the given nesting depth (1 for a
// column's type); it adds the columns nested in t to *fields and stops past
// MaxColumns of them.
func (t DataType) problemAt(depth int, fields *int) string {
	switch t.kind {
	case KindArray, KindMap, KindRow:
		return t.nestedProblem(depth, fields)
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
		if t.precision != 0 || t.scale != 0 || t.children != nil {
			return t.kind.String() + " takes no parameters"
		}
		return ""
	}
}

// nestedProblem is problemAt for ARRAY, MAP and ROW types.
func (t DataType) nestedProblem(depth int, fields *int) string {
	if depth > MaxNestingDepth {
		return "nesting deeper than " + strconv.Itoa(MaxNestingDepth) + " levels"
	}
	if t.precision != 0 || t.scale != 0 {
		return t.kind.String() + " takes no parameters"
	}
	*fields += len(t.children)
	if *fields > MaxColumns {
		return "more than " + strconv.Itoa(MaxColumns) + " columns and nested fields"
	}
	switch t.kind {
	case KindArray:
		if len(t.children) != 1 || t.children[0].Name != elemName {
			return "ARRAY needs one child column named " + strconv.Quote(elemName)
		}
	case KindMap:
		if len(t.children) != 2 || t.children[0].Name != keyName || t.children[1].Name != valueName {
			return "MAP needs two child columns named " + strconv.Quote(keyName) + " and " + strconv.Quote(valueName)
		}
		key := t.children[0]
		if key.Nullable {
			return "MAP keys are always NOT NULL"
		}
		if key.Type.IsNested() {
			return "MAP key type " + key.Type.String() + " is nested; keys must be of a type that is not ARRAY, MAP or ROW"
		}
	case KindRow:
		if len(t.children) == 0 {
			return "ROW needs at least one field"
		}
		for i, f := range t.children {
			if !ValidName(f.Name) {
				return "ROW field " + strconv.Itoa(i+1) + " " + strconv.Quote(f.Name) + ": invalid name (" + NameRule + ")"
			}
		}
		if i, j := duplicateName(t.children); i >= 0 {
			return "ROW field " + strconv.Itoa(j+1) + " " + strconv.Quote(t.children[j].Name) +
				": duplicate name (also field " + strconv.Itoa(i+1) + ")"
		}
	}
	for _, c := range t.children {
		if msg := c.Type.problemAt(depth+1, fields); msg != "" {
			where := c.Name // element, key or value
			if t.kind == KindRow {
				where = "field " + c.Name
			}
			return t.kind.String() + " " + where + ": " + msg
		}
	}
	return ""
}

// duplicateName returns the positions i < j of the first column whose name
// an earlier one has, or -1, -1. Short lists are compared pairwise, without
// allocating.
func duplicateName(columns []Column) (i, j int) {
	const pairwiseMax = 32
	if len(columns) <= pairwiseMax {
		for j := range columns {
			for i := range j {
				if columns[i].Name == columns[j].Name {
					return i, j
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, len(columns))
	for j, c := range columns {
		if i, dup := seen[c.Name]; dup {
			return i, j
		}
		seen[c.Name] = j
	}
	return -1, -1
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
