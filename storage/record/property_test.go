package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestRowProperties generates random schemas and rows and checks the whole
// cycle: schema text, binary and JSON round trips; encode, validate, read
// back every value; row to JSON and back to the same bytes.
func TestRowProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSchema(t)
		checkSchemaRoundTrips(t, s)

		e, err := NewRowEncoder(s)
		if err != nil {
			t.Fatalf("NewRowEncoder: %v", err)
		}
		want := make([]any, len(s.Columns)) // nil for null
		setters := make([]func(), len(s.Columns))
		for i, c := range s.Columns {
			want[i], setters[i] = genCell(t, e, i, c, "value "+strconv.Itoa(i))
		}
		order := rapid.Permutation(indexes(len(s.Columns))).Draw(t, "set order")
		for _, i := range order {
			setters[i]()
		}
		row, err := e.Finish(nil)
		if err != nil {
			t.Fatalf("Finish: %v", err)
		}
		if err := ValidateRow(s, row); err != nil {
			t.Fatalf("ValidateRow: %v", err)
		}
		v := NewRowView(s, row)
		for i, c := range s.Columns {
			if v.IsNull(i) != (want[i] == nil) {
				t.Fatalf("column %d: IsNull = %v, want %v", i, v.IsNull(i), want[i] == nil)
			}
			if want[i] == nil {
				continue
			}
			if got := viewValue(v, i, c.Type); got != want[i] {
				t.Fatalf("column %d (%s): got %v, want %v", i, c.Type, got, want[i])
			}
		}

		js, err := AppendRowJSON(nil, s, row)
		if err != nil {
			t.Fatalf("AppendRowJSON: %v", err)
		}
		var fields map[string]any
		if err := json.Unmarshal(js, &fields); err != nil || len(fields) != len(s.Columns) {
			t.Fatalf("JSON %s does not decode to %d fields: %v", js, len(s.Columns), err)
		}
		back, err := AppendRowFromJSON(nil, s, js)
		if err != nil {
			t.Fatalf("AppendRowFromJSON(%s): %v", js, err)
		}
		if !bytes.Equal(back, row) {
			t.Fatalf("JSON round trip changed the row\n  in %x\n out %x\njson %s", row, back, js)
		}
	})
}

// fataler is what the round-trip checks need of *testing.T and *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// checkSchemaRoundTrips checks that a valid schema survives its CLI syntax,
// binary and JSON encodings unchanged.
func checkSchemaRoundTrips(t fataler, s Schema) {
	if err := s.Validate(); err != nil {
		t.Fatalf("schema does not validate: %v", err)
	}
	parsed, err := ParseSchema(s.String())
	if err != nil || !parsed.Equal(s) {
		t.Fatalf("ParseSchema(%q) = %v, %v", s.String(), parsed, err)
	}
	bin, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var fromBin Schema
	if err := fromBin.UnmarshalBinary(bin); err != nil || !fromBin.Equal(s) {
		t.Fatalf("binary round trip = %v, %v", fromBin, err)
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON Schema
	if err := json.Unmarshal(js, &fromJSON); err != nil || !fromJSON.Equal(s) {
		t.Fatalf("JSON round trip of %s = %v, %v", js, fromJSON, err)
	}
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// genType draws a type, nested ones down to depth 4 (a column's type is at
// depth 1).
func genType(t *rapid.T, label string, depth int) DataType {
	last := int(kindCount) - 1
	if depth >= 4 {
		last = int(KindArray) - 1
	}
	kind := Kind(rapid.IntRange(int(KindBoolean), last).Draw(t, label+" kind"))
	switch kind {
	case KindDecimal:
		p := rapid.IntRange(1, MaxDecimalPrecision).Draw(t, label+" precision")
		return Decimal(p, rapid.IntRange(0, p).Draw(t, label+" scale"))
	case KindTimestamp, KindTimestampLTZ:
		return DataType{kind: kind, precision: rapid.IntRange(0, MaxTimestampPrecision).Draw(t, label+" precision")}
	case KindArray:
		return Array(genType(t, label+" element", depth+1), rapid.Bool().Draw(t, label+" element nullable"))
	case KindMap:
		key := genType(t, label+" key", 4) // not nested
		return Map(key, genType(t, label+" value", depth+1), rapid.Bool().Draw(t, label+" value nullable"))
	case KindRow:
		n := rapid.IntRange(1, 3).Draw(t, label+" fields")
		fields := make([]Column, n)
		for i := range fields {
			fl := label + " field " + strconv.Itoa(i)
			fields[i] = Column{
				Name:     rapid.StringMatching(`[A-Za-z0-9_]{1,4}`).Draw(t, fl+" name") + "_" + strconv.Itoa(i),
				Type:     genType(t, fl, depth+1),
				Nullable: rapid.Bool().Draw(t, fl+" nullable"),
			}
		}
		return Row(fields)
	default:
		return DataType{kind: kind}
	}
}

func genSchema(t *rapid.T) Schema {
	n := rapid.IntRange(1, 24).Draw(t, "columns")
	var s Schema
	for i := range n {
		label := "column " + strconv.Itoa(i)
		prefix := rapid.StringMatching(`[A-Za-z0-9_]{1,8}`).Draw(t, label+" name")
		s.Columns = append(s.Columns, Column{
			Name:     prefix + "_" + strconv.Itoa(i), // unique
			Type:     genType(t, label, 1),
			Nullable: rapid.Bool().Draw(t, label+" nullable"),
		})
	}
	for _, i := range rapid.Permutation(indexes(n)).Draw(t, "key order") {
		if !s.Columns[i].Nullable && !s.Columns[i].Type.IsNested() && rapid.IntRange(0, 3).Draw(t, "in key") == 0 {
			s.PrimaryKey = append(s.PrimaryKey, s.Columns[i].Name)
		}
	}
	return s
}

// genCell draws a value for column i and returns it in the form viewValue
// returns (nil for null), with a function that sets it on e.
func genCell(t *rapid.T, e *RowEncoder, i int, c Column, label string) (any, func()) {
	if c.Nullable && rapid.IntRange(0, 4).Draw(t, label+" null") == 0 {
		if rapid.Bool().Draw(t, label+" explicit null") {
			return nil, func() { e.SetNull(i) }
		}
		return nil, func() {}
	}
	typ := c.Type
	switch typ.kind {
	case KindBoolean:
		b := rapid.Bool().Draw(t, label)
		return b, func() { e.SetBool(i, b) }
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt, KindDate, KindTime:
		lo, hi, _ := intRange(typ.kind)
		v := rapid.Int64Range(lo, hi).Draw(t, label)
		return v, func() { e.SetInt64(i, v) }
	case KindFloat:
		bits := rapid.Uint32().Draw(t, label)
		f := math.Float32frombits(bits)
		if f != f {
			bits = canonicalNaN32
		}
		return bits, func() { e.SetFloat32(i, f) }
	case KindDouble:
		bits := rapid.Uint64().Draw(t, label)
		f := math.Float64frombits(bits)
		if f != f {
			bits = canonicalNaN64
		}
		return bits, func() { e.SetFloat64(i, f) }
	case KindDecimal:
		digits := rapid.StringMatching(`[0-9]{1,`+strconv.Itoa(typ.precision)+`}`).Draw(t, label)
		x, _ := new(big.Int).SetString(digits, 10)
		if rapid.Bool().Draw(t, label+" negative") {
			x.Neg(x)
		}
		switch rapid.IntRange(0, 2).Draw(t, label+" setter") {
		case 0:
			if x.IsInt64() {
				return x.String(), func() { e.SetDecimal(i, x.Int64()) }
			}
			fallthrough
		case 1:
			return x.String(), func() { e.SetDecimalBig(i, x) }
		default:
			b := bigToTwos(x)
			return x.String(), func() { e.SetDecimalBytes(i, b) }
		}
	case KindString:
		str := rapid.String().Draw(t, label)
		if rapid.Bool().Draw(t, label+" as bytes") {
			return str, func() { e.SetStringBytes(i, []byte(str)) }
		}
		return str, func() { e.SetString(i, str) }
	case KindBytes:
		b := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, label)
		return string(b), func() { e.SetBytes(i, b) }
	case KindTimestamp, KindTimestampLTZ:
		seconds := rapid.Int64Range(minTimestampMillis/1000, maxTimestampMillis/1000).Draw(t, label+" seconds")
		unit := pow10int64(9 - typ.precision)
		fraction := rapid.Int64Range(0, nanosPerSec/unit-1).Draw(t, label+" fraction") * unit
		millis := seconds*1000 + fraction/nanosPerMilli
		nanos := int32(fraction % nanosPerMilli)
		return [2]int64{millis, int64(nanos)}, func() { e.SetTimestamp(i, millis, nanos) }
	case KindArray, KindMap, KindRow:
		want, payload := genNested(t, label, typ)
		return want, func() { e.SetNested(i, payload) }
	default:
		t.Fatalf("no generator for %s", typ)
		return nil, nil
	}
}

// genNested draws a value of a nested type and returns it in the form
// viewValue returns, with its encoding.
func genNested(t *rapid.T, label string, typ DataType) (string, []byte) {
	var want []any
	var payload []byte
	var err error
	switch typ.kind {
	case KindArray:
		a, aerr := NewArrayEncoder(typ.Elem().Type, typ.Elem().Nullable)
		if aerr != nil {
			t.Fatalf("NewArrayEncoder(%s): %v", typ, aerr)
		}
		for j := range rapid.IntRange(0, 4).Draw(t, label+" elements") {
			w, set := genCell(t, &a.e, a.next(), typ.Elem(), label+"["+strconv.Itoa(j)+"]")
			set()
			want = append(want, w)
		}
		payload, err = a.Finish(nil)
	case KindRow:
		e, rerr := NewRowValueEncoder(typ.Fields())
		if rerr != nil {
			t.Fatalf("NewRowValueEncoder(%s): %v", typ, rerr)
		}
		for k, f := range typ.Fields() {
			w, set := genCell(t, e, k, f, label+"."+f.Name)
			set()
			want = append(want, w)
		}
		payload, err = e.Finish(nil)
	case KindMap:
		m, merr := NewMapEncoder(typ.MapKey().Type, typ.MapValue().Type, typ.MapValue().Nullable)
		if merr != nil {
			t.Fatalf("NewMapEncoder(%s): %v", typ, merr)
		}
		seen := map[string]bool{}
		for j := range rapid.IntRange(0, 3).Draw(t, label+" entries") {
			kl := label + ".keys[" + strconv.Itoa(j) + "]"
			k, setKey := genCell(t, &m.keys.e, m.keys.Len(), typ.MapKey(), kl)
			if seen[fmt.Sprint(k)] {
				continue
			}
			seen[fmt.Sprint(k)] = true
			m.keys.next()
			setKey()
			v, setValue := genCell(t, &m.values.e, m.values.next(), typ.MapValue(), label+".values["+strconv.Itoa(j)+"]")
			setValue()
			want = append(want, [2]any{k, v})
		}
		payload, err = m.Finish(nil)
	}
	if err != nil {
		t.Fatalf("encoding a %s: %v", typ, err)
	}
	return fmt.Sprint(want), payload
}

// viewValue reads column i in the form genCell returns.
func viewValue(v RowView, i int, typ DataType) any {
	switch typ.kind {
	case KindBoolean:
		return v.Bool(i)
	case KindFloat:
		return math.Float32bits(v.Float32(i))
	case KindDouble:
		return math.Float64bits(v.Float64(i))
	case KindDecimal:
		return v.DecimalBig(i).String()
	case KindString:
		return v.String(i)
	case KindBytes:
		return string(v.Bytes(i))
	case KindTimestamp, KindTimestampLTZ:
		millis, nanos := v.Timestamp(i)
		return [2]int64{millis, int64(nanos)}
	case KindArray:
		a := v.Array(i)
		var list []any
		for j := range a.Len() {
			list = append(list, viewOrNil(a.v, j, typ.Elem().Type))
		}
		return fmt.Sprint(list)
	case KindRow:
		r := v.Row(i)
		var list []any
		for k, f := range typ.Fields() {
			list = append(list, viewOrNil(r, k, f.Type))
		}
		return fmt.Sprint(list)
	case KindMap:
		m := v.Map(i)
		var list []any
		for j := range m.Len() {
			list = append(list, [2]any{viewOrNil(m.Keys().v, j, typ.MapKey().Type), viewOrNil(m.Values().v, j, typ.MapValue().Type)})
		}
		return fmt.Sprint(list)
	default:
		return v.Int64(i)
	}
}

func viewOrNil(v RowView, i int, typ DataType) any {
	if v.IsNull(i) {
		return nil
	}
	return viewValue(v, i, typ)
}

// bigToTwos returns x as big-endian two's complement with one redundant sign
// byte, to exercise normalization.
func bigToTwos(x *big.Int) []byte {
	n := len(x.Bytes()) + 2
	v := new(big.Int).Set(x)
	if x.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	out := make([]byte, n)
	return v.FillBytes(out)
}
