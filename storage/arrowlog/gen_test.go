package arrowlog

import (
	"math"
	"math/big"
	"strconv"

	"github.com/floedb/floe/storage/record"
	"pgregory.net/rapid"
)

// The ranges of DATE and timestamp values, as record defines them.
const (
	minDateDays   = -719_528  // 0000-01-01
	maxDateDays   = 2_932_896 // 9999-12-31
	minSeconds    = minDateDays * 86_400
	maxSeconds    = (maxDateDays+1)*86_400 - 1
	minNanosSecs  = math.MinInt64/1_000_000_000 + 1 // whole seconds int64 nanoseconds hold
	maxNanosSecs  = math.MaxInt64/1_000_000_000 - 1
	millisPerDay  = 86_400_000
	nanosPerSec   = 1_000_000_000
	maxColumnsGen = 12
)

var allKinds = []record.Kind{
	record.KindBoolean, record.KindTinyInt, record.KindSmallInt, record.KindInt, record.KindBigInt,
	record.KindFloat, record.KindDouble, record.KindDecimal, record.KindString, record.KindBytes,
	record.KindDate, record.KindTime, record.KindTimestamp, record.KindTimestampLTZ,
}

// maxDepthGen is the deepest nesting of generated types.
const maxDepthGen = 3

// genType draws a type, nested to at most depth levels: an ARRAY, MAP or
// ROW one time in four while depth allows.
func genType(t *rapid.T, label string, depth int) record.DataType {
	if depth > 0 && rapid.IntRange(0, 3).Draw(t, label+" nested") == 0 {
		return genNestedType(t, label, depth)
	}
	return genFlatType(t, label)
}

func genNestedType(t *rapid.T, label string, depth int) record.DataType {
	switch rapid.IntRange(0, 2).Draw(t, label+" nested kind") {
	case 0:
		return record.Array(genType(t, label+".element", depth-1), rapid.Bool().Draw(t, label+" element nullable"))
	case 1:
		return record.Map(genFlatType(t, label+".key"), genType(t, label+".value", depth-1),
			rapid.Bool().Draw(t, label+" value nullable"))
	default:
		n := rapid.IntRange(1, 3).Draw(t, label+" fields")
		fields := make([]record.Column, n)
		for i := range fields {
			name := "f" + strconv.Itoa(i)
			fields[i] = record.Column{Name: name, Type: genType(t, label+"."+name, depth-1),
				Nullable: rapid.Bool().Draw(t, label+" field nullable")}
		}
		return record.Row(fields)
	}
}

// genFlatType draws a type that is not nested.
func genFlatType(t *rapid.T, label string) record.DataType {
	switch k := rapid.SampledFrom(allKinds).Draw(t, label+" kind"); k {
	case record.KindBoolean:
		return record.Boolean()
	case record.KindTinyInt:
		return record.TinyInt()
	case record.KindSmallInt:
		return record.SmallInt()
	case record.KindInt:
		return record.Int()
	case record.KindBigInt:
		return record.BigInt()
	case record.KindFloat:
		return record.Float()
	case record.KindDouble:
		return record.Double()
	case record.KindDecimal:
		p := rapid.IntRange(1, record.MaxDecimalPrecision).Draw(t, label+" precision")
		return record.Decimal(p, rapid.IntRange(0, p).Draw(t, label+" scale"))
	case record.KindString:
		return record.String()
	case record.KindBytes:
		return record.Bytes()
	case record.KindDate:
		return record.Date()
	case record.KindTime:
		return record.Time()
	case record.KindTimestamp:
		return record.Timestamp(rapid.IntRange(0, record.MaxTimestampPrecision).Draw(t, label+" precision"))
	default:
		return record.TimestampLTZ(rapid.IntRange(0, record.MaxTimestampPrecision).Draw(t, label+" precision"))
	}
}

func genSchema(t *rapid.T) record.Schema {
	n := rapid.IntRange(1, maxColumnsGen).Draw(t, "columns")
	var s record.Schema
	for i := range n {
		s.Columns = append(s.Columns, record.Column{
			Name:     "c" + strconv.Itoa(i),
			Type:     genType(t, "c"+strconv.Itoa(i), maxDepthGen),
			Nullable: rapid.Bool().Draw(t, "nullable"),
		})
	}
	return s
}

// setter sets one value on a row encoder, at the column index given: the
// same value makes a full row and a projected one.
type setter func(e *record.RowEncoder, i int)

// genValues draws one value per column of s.
func genValues(t *rapid.T, s record.Schema) []setter {
	values := make([]setter, len(s.Columns))
	for i, c := range s.Columns {
		values[i] = genValue(t, c)
	}
	return values
}

func genValue(t *rapid.T, c record.Column) setter {
	v := drawValue(t, c)
	return func(e *record.RowEncoder, i int) { v(rowSink{e, i}) }
}

// value gives one value to a sink: a column of a row, an element of an
// array.
type value func(s valueSink)

// drawValue draws a value of column c (an element, a map's key or value,
// a field): null one time in four if c is nullable.
func drawValue(t *rapid.T, c record.Column) value {
	if c.Nullable && rapid.IntRange(0, 3).Draw(t, "null") == 0 {
		return func(s valueSink) { s.setNull() }
	}
	switch c.Type.Kind() {
	case record.KindBoolean:
		v := rapid.Bool().Draw(t, "bool")
		return func(s valueSink) { s.setBool(v) }
	case record.KindTinyInt:
		return intValue(rapid.Int8().Draw(t, "tinyint"))
	case record.KindSmallInt:
		return intValue(rapid.Int16().Draw(t, "smallint"))
	case record.KindInt:
		return intValue(rapid.Int32().Draw(t, "int"))
	case record.KindBigInt:
		return intValue(rapid.Int64().Draw(t, "bigint"))
	case record.KindFloat:
		v := rapid.OneOf(rapid.Float32(), rapid.SampledFrom([]float32{float32(math.NaN()), float32(math.Inf(-1)), 0})).Draw(t, "float")
		return func(s valueSink) { s.setFloat32(v) }
	case record.KindDouble:
		v := rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Copysign(0, -1)})).Draw(t, "double")
		return func(s valueSink) { s.setFloat64(v) }
	case record.KindDecimal:
		v := twosComplement(genDecimal(t, c.Type.Precision()))
		return func(s valueSink) { s.setDecimalBytes(v) }
	case record.KindString:
		v := rapid.OneOf(rapid.Just(""), rapid.String()).Draw(t, "string")
		return func(s valueSink) { s.setString([]byte(v)) }
	case record.KindBytes:
		v := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "bytes")
		return func(s valueSink) { s.setBytes(v) }
	case record.KindDate:
		return intValue(rapid.Int64Range(minDateDays, maxDateDays).Draw(t, "date"))
	case record.KindTime:
		return intValue(rapid.Int64Range(0, millisPerDay-1).Draw(t, "time"))
	case record.KindArray, record.KindMap, record.KindRow:
		v := drawNested(t, c.Type)
		return func(s valueSink) { s.setNested(v) }
	default:
		millis, nanos := genTimestamp(t, c.Type.Precision())
		return func(s valueSink) { s.setTimestamp(millis, nanos) }
	}
}

// drawNested draws an ARRAY, MAP or ROW value of type typ, encoded: up to
// 4 elements or entries (map keys drawn again until distinct).
func drawNested(t *rapid.T, typ record.DataType) []byte {
	var encoded []byte
	var err error
	switch typ.Kind() {
	case record.KindArray:
		a, _ := record.NewArrayEncoder(typ.Elem().Type, typ.Elem().Nullable)
		for range rapid.IntRange(0, 4).Draw(t, "elements") {
			drawValue(t, typ.Elem())(arraySink{a})
		}
		encoded, err = a.Finish(nil)
	case record.KindMap:
		m, _ := record.NewMapEncoder(typ.MapKey().Type, typ.MapValue().Type, typ.MapValue().Nullable)
		one, _ := record.NewArrayEncoder(typ.MapKey().Type, false)
		seen := map[string]bool{}
		for range rapid.IntRange(0, 4).Draw(t, "entries") {
			key := drawValue(t, typ.MapKey())
			key(arraySink{one})
			b, _ := one.Finish(nil)
			if seen[string(b)] {
				continue
			}
			seen[string(b)] = true
			key(arraySink{m.Keys()})
			drawValue(t, typ.MapValue())(arraySink{m.Values()})
		}
		encoded, err = m.Finish(nil)
	default:
		e, _ := record.NewRowValueEncoder(typ.Fields())
		for f, field := range typ.Fields() {
			drawValue(t, field)(rowSink{e, f})
		}
		encoded, err = e.Finish(nil)
	}
	if err != nil {
		t.Fatalf("encoding a generated %v: %v", typ, err)
	}
	return encoded
}

func intValue[T int8 | int16 | int32 | int64](v T) value {
	return func(s valueSink) { s.setInt64(int64(v)) }
}

// twosComplement is v as big-endian two's complement.
func twosComplement(v *big.Int) []byte {
	n := v.BitLen()/8 + 1
	mod := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	return new(big.Int).Mod(v, mod).FillBytes(make([]byte, n))
}

// genDecimal draws an unscaled value of at most p digits, often at the
// ends of the range.
func genDecimal(t *rapid.T, p int) *big.Int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	maxV := new(big.Int).Sub(limit, big.NewInt(1))
	var v *big.Int
	switch rapid.IntRange(0, 3).Draw(t, "decimal end") {
	case 0:
		v = maxV
	case 1:
		v = new(big.Int).Neg(maxV)
	default:
		digits := rapid.IntRange(1, p).Draw(t, "digits")
		text := rapid.StringMatching("[0-9]{"+strconv.Itoa(digits)+"}").Draw(t, "decimal")
		v, _ = new(big.Int).SetString(text, 10)
		if rapid.Bool().Draw(t, "negative") {
			v.Neg(v)
		}
	}
	return v
}

// genTimestamp draws a timestamp of precision p over its whole range: the
// years 0000 to 9999 up to p 6, what int64 nanoseconds hold above.
func genTimestamp(t *rapid.T, p int) (millis int64, nanosOfMilli int32) {
	lo, hi := int64(minSeconds), int64(maxSeconds)
	if p > record.MaxCompactTimestampPrecision {
		lo, hi = minNanosSecs, maxNanosSecs
	}
	secs := rapid.OneOf(rapid.Int64Range(lo, hi), rapid.SampledFrom([]int64{lo, hi, 0, -1})).Draw(t, "seconds")
	unit := int64(math.Pow10(9 - p))
	frac := rapid.Int64Range(0, nanosPerSec/unit-1).Draw(t, "fraction") * unit
	return secs*1000 + frac/1_000_000, int32(frac % 1_000_000)
}

// encodeRow makes the row of values, in order, under enc's schema.
func encodeRow(t rapidT, enc *record.RowEncoder, values []setter) []byte {
	for i, set := range values {
		set(enc, i)
	}
	row, err := enc.Finish(nil)
	if err != nil {
		t.Fatalf("encoding a generated row: %v", err)
	}
	return row
}

type rapidT interface {
	Fatalf(format string, args ...any)
}
