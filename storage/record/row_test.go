package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func mustEncoder(t testing.TB, s Schema) *RowEncoder {
	t.Helper()
	e, err := NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustFinish(t testing.TB, e *RowEncoder) []byte {
	t.Helper()
	row, err := e.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// fullRow sets every column of allTypesSchema to a non-null value.
func fullRow(e *RowEncoder) {
	e.SetInt64(0, math.MinInt64)
	e.SetString(1, "eu-west")
	e.SetBool(2, true)
	e.SetInt64(3, -128)
	e.SetInt64(4, 32767)
	e.SetInt64(5, -2147483648)
	e.SetFloat32(6, 1.5)
	e.SetFloat64(7, -math.MaxFloat64)
	e.SetDecimal(8, -99999_99999)
	e.SetDecimalBig(9, new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil), big.NewInt(1)))
	e.SetString(10, "héllo, wörld")
	e.SetBytes(11, []byte{0, 1, 2, 0xff})
	e.SetInt64(12, maxDateDays)
	e.SetInt64(13, millisPerDay-1)
	e.SetTimestamp(14, minTimestampMillis, 0)
	e.SetTimestamp(15, maxTimestampMillis, 999_999)
	e.SetTimestamp(16, 1_700_000_000_123, 456_000)
	e.SetTimestamp(17, -1, 1)
}

func TestRowRoundTripAllTypes(t *testing.T) {
	s := allTypesSchema()
	e := mustEncoder(t, s)
	fullRow(e)
	row := mustFinish(t, e)
	if err := ValidateRow(s, row); err != nil {
		t.Fatalf("ValidateRow: %v", err)
	}
	v := NewRowView(s, row)
	for i := range s.Columns {
		if v.IsNull(i) {
			t.Errorf("column %d is null", i)
		}
	}
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("id", v.Int64(0), int64(math.MinInt64))
	check("region", v.String(1), "eu-west")
	check("flag", v.Bool(2), true)
	check("tiny", v.Int64(3), int64(-128))
	check("small", v.Int64(4), int64(32767))
	check("num", v.Int64(5), int64(-2147483648))
	check("f32", v.Float32(6), float32(1.5))
	check("f64", v.Float64(7), -math.MaxFloat64)
	amount, ok := v.DecimalInt64(8)
	check("amount", amount, int64(-99999_99999))
	check("amount ok", ok, true)
	check("big_amount", v.DecimalBig(9).String(), strings.Repeat("9", 38))
	if _, ok := v.DecimalInt64(9); ok {
		t.Error("DecimalInt64 of a 38-digit value reports ok")
	}
	check("note", string(v.StringBytes(10)), "héllo, wörld")
	check("blob", string(v.Bytes(11)), "\x00\x01\x02\xff")
	check("day", v.Int64(12), int64(maxDateDays))
	check("clock", v.Int64(13), int64(millisPerDay-1))
	ms, ns := v.Timestamp(14)
	check("ts3", [2]int64{ms, int64(ns)}, [2]int64{minTimestampMillis, 0})
	ms, ns = v.Timestamp(15)
	check("ts9", [2]int64{ms, int64(ns)}, [2]int64{maxTimestampMillis, 999_999})
	ms, ns = v.Timestamp(16)
	check("ltz6", [2]int64{ms, int64(ns)}, [2]int64{1_700_000_000_123, 456_000})
	ms, ns = v.Timestamp(17)
	check("ltz9", [2]int64{ms, int64(ns)}, [2]int64{-1, 1})
}

// TestRowLayoutGolden pins the byte layout to the example in row.go.
func TestRowLayoutGolden(t *testing.T) {
	s, err := ParseSchema("id BIGINT NOT NULL, name STRING, note STRING, tag STRING")
	if err != nil {
		t.Fatal(err)
	}
	e := mustEncoder(t, s)
	e.SetInt64(0, 7)
	e.SetString(1, "hello, world")
	e.SetString(2, "hi")
	got := mustFinish(t, e)
	want := []byte{
		0x08,
		0x07, 0, 0, 0, 0, 0, 0, 0,
		0x21, 0, 0, 0, 0x0c, 0, 0, 0,
		'h', 'i', 0, 0, 0, 0, 0, 0x82,
		0, 0, 0, 0, 0, 0, 0, 0,
		'h', 'e', 'l', 'l', 'o', ',', ' ', 'w', 'o', 'r', 'l', 'd',
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("row\n got % x\nwant % x", got, want)
	}
}

func TestRowDecimalBytes(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "small", Type: Decimal(18, 0)}, {Name: "big", Type: Decimal(38, 0)}}}
	tests := []struct {
		value int64
		bytes []byte // minimal big-endian two's complement
	}{
		{0, []byte{0}},
		{1, []byte{1}},
		{-1, []byte{0xff}},
		{127, []byte{0x7f}},
		{128, []byte{0x00, 0x80}},
		{-128, []byte{0x80}},
		{-129, []byte{0xff, 0x7f}},
		{999_999_999_999_999_999, []byte{0x0d, 0xe0, 0xb6, 0xb3, 0xa7, 0x63, 0xff, 0xff}},
	}
	e := mustEncoder(t, s)
	for _, tt := range tests {
		// Non-minimal input is accepted and normalized.
		sign := byte(0x00)
		if tt.value < 0 {
			sign = 0xff
		}
		padded := append([]byte{sign}, tt.bytes...)
		e.SetDecimalBytes(0, padded)
		e.SetDecimal(1, tt.value)
		row := mustFinish(t, e)
		if err := ValidateRow(s, row); err != nil {
			t.Fatalf("%d: ValidateRow: %v", tt.value, err)
		}
		v := NewRowView(s, row)
		for i := range 2 {
			if got, ok := v.DecimalInt64(i); !ok || got != tt.value {
				t.Errorf("%d: DecimalInt64(%d) = %d, %v", tt.value, i, got, ok)
			}
			if got := v.AppendDecimalBytes(nil, i); !bytes.Equal(got, tt.bytes) {
				t.Errorf("%d: AppendDecimalBytes(%d) = %x, want %x", tt.value, i, got, tt.bytes)
			}
			if got := v.DecimalBig(i); got.Int64() != tt.value || !got.IsInt64() {
				t.Errorf("%d: DecimalBig(%d) = %v", tt.value, i, got)
			}
		}
	}
}

func TestRowNulls(t *testing.T) {
	s := allTypesSchema()
	e := mustEncoder(t, s)
	e.SetInt64(0, 7)
	e.SetString(1, "r")
	e.SetNull(3) // explicit null; the others stay unset, also null
	row := mustFinish(t, e)
	if err := ValidateRow(s, row); err != nil {
		t.Fatal(err)
	}
	if want := fixedEnd(len(s.Columns)); len(row) != want {
		t.Errorf("row of %d bytes, want %d: short strings are inline", len(row), want)
	}
	v := NewRowView(s, row)
	for i := range s.Columns {
		if got := v.IsNull(i); got != (i >= 2) {
			t.Errorf("IsNull(%d) = %v", i, got)
		}
	}
}

func TestRowInlineAndOutOfLine(t *testing.T) {
	s := Schema{Columns: []Column{
		{Name: "a", Type: String()}, {Name: "b", Type: Bytes()}, {Name: "c", Type: String()}, {Name: "d", Type: Bytes()},
	}}
	e := mustEncoder(t, s)
	for _, lens := range [][4]int{{0, 0, 0, 0}, {7, 7, 7, 7}, {8, 0, 8, 0}, {100, 3, 1, 9}, {0, 8, 7, 1000}} {
		want := make([]string, 4)
		for i, n := range lens {
			want[i] = strings.Repeat(string(rune('a'+i)), n)
			if i%2 == 0 {
				e.SetString(i, want[i])
			} else {
				e.SetBytes(i, []byte(want[i]))
			}
		}
		row := mustFinish(t, e)
		if err := ValidateRow(s, row); err != nil {
			t.Fatalf("%v: %v", lens, err)
		}
		size := fixedEnd(4)
		for _, n := range lens {
			if n > maxInlinePayload {
				size += n
			}
		}
		if len(row) != size {
			t.Errorf("%v: row of %d bytes, want %d", lens, len(row), size)
		}
		v := NewRowView(s, row)
		for i := range 4 {
			if got := string(v.StringBytes(i)); got != want[i] {
				t.Errorf("%v: column %d = %q, want %q", lens, i, got, want[i])
			}
		}
	}
}

func TestRowEncoderSetTwiceAndReuse(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "a", Type: String()}, {Name: "b", Type: String(), Nullable: true}}}
	e := mustEncoder(t, s)
	e.SetString(0, "first value, long")
	e.SetString(1, "other long value")
	e.SetString(0, "second value, longer")
	e.SetNull(1)
	row := mustFinish(t, e)
	if err := ValidateRow(s, row); err != nil {
		t.Fatal(err)
	}
	v := NewRowView(s, row)
	if v.String(0) != "second value, longer" || !v.IsNull(1) {
		t.Fatalf("got %q, null=%v", v.String(0), v.IsNull(1))
	}
	// The encoder is reset: the next row starts empty, and appends after dst.
	e.SetString(0, "x")
	two, err := e.Finish(row)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(two[:len(row)], row) || ValidateRow(s, two[len(row):]) != nil {
		t.Fatal("second row clobbered the first or is invalid")
	}
	if !NewRowView(s, two[len(row):]).IsNull(1) {
		t.Fatal("column set in the previous row leaked into the next")
	}
}

func TestRowCanonicalNaN(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "f", Type: Float()}, {Name: "d", Type: Double()}}}
	e := mustEncoder(t, s)
	e.SetFloat32(0, math.Float32frombits(0xffc00001))
	e.SetFloat64(1, math.Float64frombits(0xfff8000000000123))
	row := mustFinish(t, e)
	e.SetFloat32(0, float32(math.NaN()))
	e.SetFloat64(1, math.NaN())
	if other := mustFinish(t, e); !bytes.Equal(row, other) {
		t.Fatalf("NaNs encode differently: %x vs %x", row, other)
	}
	if err := ValidateRow(s, row); err != nil {
		t.Fatal(err)
	}
}

func TestRowEncoderErrors(t *testing.T) {
	s := allTypesSchema()
	tests := []struct {
		name string
		set  func(e *RowEncoder)
		want error
		msg  string
	}{
		{"missing NOT NULL", func(e *RowEncoder) { e.Reset(); e.SetInt64(0, 1) }, ErrNullNotAllowed, `record: column "region": missing value for NOT NULL column`},
		{"null for NOT NULL", func(e *RowEncoder) { e.SetNull(0) }, ErrNullNotAllowed, `record: column "id": null for NOT NULL column`},
		{"index out of range", func(e *RowEncoder) { e.SetInt64(99, 1) }, ErrUnknownColumn, "record: column index 99 out of range for 18 columns"},
		{"negative index", func(e *RowEncoder) { e.SetNull(-1) }, ErrUnknownColumn, ""},
		{"SetBool on BIGINT", func(e *RowEncoder) { e.SetBool(0, true) }, ErrWrongType, `record: column "id": SetBool does not apply to a BIGINT column`},
		{"SetInt64 on STRING", func(e *RowEncoder) { e.SetInt64(1, 1) }, ErrWrongType, ""},
		{"SetString on BYTES", func(e *RowEncoder) { e.SetString(11, "x") }, ErrWrongType, ""},
		{"SetStringBytes on BYTES", func(e *RowEncoder) { e.SetStringBytes(11, nil) }, ErrWrongType, ""},
		{"SetBytes on STRING", func(e *RowEncoder) { e.SetBytes(1, nil) }, ErrWrongType, ""},
		{"SetFloat32 on DOUBLE", func(e *RowEncoder) { e.SetFloat32(7, 1) }, ErrWrongType, ""},
		{"SetFloat64 on FLOAT", func(e *RowEncoder) { e.SetFloat64(6, 1) }, ErrWrongType, ""},
		{"SetDecimal on INT", func(e *RowEncoder) { e.SetDecimal(5, 1) }, ErrWrongType, ""},
		{"SetTimestamp on DATE", func(e *RowEncoder) { e.SetTimestamp(12, 1, 0) }, ErrWrongType, ""},
		{"TINYINT overflow", func(e *RowEncoder) { e.SetInt64(3, 128) }, ErrOverflow, `record: column "tiny": value 128 out of range for TINYINT`},
		{"SMALLINT overflow", func(e *RowEncoder) { e.SetInt64(4, -32769) }, ErrOverflow, ""},
		{"INT overflow", func(e *RowEncoder) { e.SetInt64(5, 1<<31) }, ErrOverflow, ""},
		{"DATE overflow", func(e *RowEncoder) { e.SetInt64(12, maxDateDays+1) }, ErrOverflow, ""},
		{"TIME overflow", func(e *RowEncoder) { e.SetInt64(13, millisPerDay) }, ErrOverflow, ""},
		{"TIME negative", func(e *RowEncoder) { e.SetInt64(13, -1) }, ErrOverflow, ""},
		{"DECIMAL precision", func(e *RowEncoder) { e.SetDecimal(8, 10_000_000_000) }, ErrOverflow, `record: column "amount": unscaled value 10000000000 exceeds DECIMAL(10,2)`},
		{"DECIMAL big precision", func(e *RowEncoder) {
			e.SetDecimalBig(9, new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil))
		}, ErrOverflow, ""},
		{"DECIMAL too many bytes", func(e *RowEncoder) { e.SetDecimalBytes(9, bytes.Repeat([]byte{0x7f}, 17)) }, ErrOverflow, ""},
		{"DECIMAL empty bytes", func(e *RowEncoder) { e.SetDecimalBytes(9, nil) }, ErrInvalidValue, ""},
		{"DECIMAL nil big", func(e *RowEncoder) { e.SetDecimalBig(9, nil) }, ErrInvalidValue, ""},
		{"invalid UTF-8", func(e *RowEncoder) { e.SetString(10, "a\xffb") }, ErrInvalidUTF8, `record: column "note": string is not valid UTF-8`},
		{"invalid UTF-8 bytes", func(e *RowEncoder) { e.SetStringBytes(10, []byte{0xed, 0xa0, 0x80}) }, ErrInvalidUTF8, ""},
		{"TIMESTAMP(3) with nanos", func(e *RowEncoder) { e.SetTimestamp(14, 0, 1000) }, ErrOverflow,
			`record: column "ts3": fraction of second .000001000 has more than 3 digits for TIMESTAMP(3)`},
		{"TIMESTAMP before year 0", func(e *RowEncoder) { e.SetTimestamp(15, minTimestampMillis-1, 0) }, ErrOverflow, ""},
		{"TIMESTAMP after year 9999", func(e *RowEncoder) { e.SetTimestamp(16, maxTimestampMillis+1, 0) }, ErrOverflow, ""},
		{"TIMESTAMP nanos range", func(e *RowEncoder) { e.SetTimestamp(17, 0, 1_000_000) }, ErrOverflow, ""},
		{"TIMESTAMP negative nanos", func(e *RowEncoder) { e.SetTimestamp(17, 0, -1) }, ErrOverflow, ""},
		{"first error wins", func(e *RowEncoder) { e.SetBool(0, true); e.SetInt64(3, 1000) }, ErrWrongType, ""},
	}
	e := mustEncoder(t, s)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.SetInt64(0, 1)
			e.SetString(1, "r")
			tt.set(e)
			row, err := e.Finish([]byte("keep"))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Finish error = %v, want %v", err, tt.want)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("error\n got %s\nwant %s", err, tt.msg)
			}
			if string(row) != "keep" {
				t.Errorf("Finish changed dst on error: %q", row)
			}
			// The encoder is usable again after an error.
			e.SetInt64(0, 1)
			e.SetString(1, "r")
			if _, err := e.Finish(nil); err != nil {
				t.Fatalf("next row: %v", err)
			}
		})
	}
	var ce *ColumnError
	e.SetInt64(3, 1000)
	if _, err := e.Finish(nil); !errors.As(err, &ce) || ce.Column != "tiny" {
		t.Fatalf("error %v is not a *ColumnError for tiny", err)
	}
}

func TestValidateRowErrors(t *testing.T) {
	s := allTypesSchema()
	e := mustEncoder(t, s)
	fullRow(e)
	valid := mustFinish(t, e)
	n := len(s.Columns)
	slotAt := func(i int) int { return bitmapBytes(n) + slotBytes*i }
	putSlot := func(b []byte, i int, v uint64) { binary.LittleEndian.PutUint64(b[slotAt(i):], v) }
	slotOf := func(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[slotAt(i):]) }

	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		msg    string // substring of the error
	}{
		{"empty", func([]byte) []byte { return nil }, "0 bytes, shorter than the 147-byte bitmap and fixed part of 18 columns"},
		{"truncated fixed part", func(b []byte) []byte { return b[:100] }, "shorter than"},
		{"truncated variable part", func(b []byte) []byte { return b[:len(b)-1] }, "ends past the row"},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }, "1 bytes after the last payload"},
		{"bitmap bit past last column", func(b []byte) []byte { b[2] |= 0x80; return b }, "null bitmap has bits set past the last column"},
		{"null in NOT NULL", func(b []byte) []byte { b[0] |= 1; return b }, `column "id": invalid row: null in NOT NULL column`},
		{"null with non-zero slot", func(b []byte) []byte { b[0] |= 1 << 2; return b }, `column "flag": invalid row: BOOLEAN: slot of a null value is not zero`},
		{"boolean 2", func(b []byte) []byte { putSlot(b, 2, 2); return b }, "neither 0 nor 1"},
		{"tinyint range", func(b []byte) []byte { putSlot(b, 3, 128); return b }, `"tiny": invalid row: TINYINT: value 128 out of range`},
		{"smallint range", func(b []byte) []byte { putSlot(b, 4, 1<<15); return b }, "out of range"},
		{"int range", func(b []byte) []byte { putSlot(b, 5, 1<<31); return b }, "out of range"},
		{"float high bytes", func(b []byte) []byte { putSlot(b, 6, 1<<32); return b }, "high bytes of a FLOAT slot"},
		{"float NaN", func(b []byte) []byte { putSlot(b, 6, 0x7fc00001); return b }, "canonical NaN"},
		{"double NaN", func(b []byte) []byte { putSlot(b, 7, 0x7ff8000000000001); return b }, "canonical NaN"},
		{"decimal precision", func(b []byte) []byte { putSlot(b, 8, 10_000_000_000); return b }, "has more than 10 digits"},
		{"date range", func(b []byte) []byte { v := int64(minDateDays - 1); putSlot(b, 12, uint64(v)); return b }, "out of range"},
		{"time range", func(b []byte) []byte { putSlot(b, 13, millisPerDay); return b }, "out of range"},
		{"timestamp precision", func(b []byte) []byte { putSlot(b, 14, slotOf(b, 14)+1); return b }, "more fractional digits"},
		{"timestamp range", func(b []byte) []byte { putSlot(b, 16, maxTimestampMicros+1); return b }, "outside the years"},
		{"inline length 8", func(b []byte) []byte { putSlot(b, 1, slotOf(b, 1)|0x08<<56); return b }, "inline payload length 15 exceeds 7"},
		{"inline padding", func(b []byte) []byte { putSlot(b, 11, slotOf(b, 11)|0x7f<<48); return b }, "inline payload padding"},
		{"short payload out of line", func(b []byte) []byte { putSlot(b, 1, 7<<32|uint64(fixedEnd(n))); return b }, "payload of 7 bytes is not inline"},
		{"offset gap", func(b []byte) []byte { putSlot(b, 9, slotOf(b, 9)+1); return b }, "want 147"},
		{"string UTF-8", func(b []byte) []byte { b[uint32(slotOf(b, 10))] = 0xff; return b }, `"note": invalid row: STRING: not valid UTF-8`},
		{"decimal not minimal", func(b []byte) []byte { b[fixedEnd(n)] = 0; return b }, "not minimal two's complement"},
		{"timestamp nanos", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[uint32(slotOf(b, 15))+8:], 1_000_000)
			return b
		}, "nanoseconds of millisecond 1000000 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := tt.mutate(append([]byte(nil), valid...))
			err := ValidateRow(s, row)
			if !errors.Is(err, ErrInvalidRow) {
				t.Fatalf("ValidateRow = %v, want ErrInvalidRow", err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
	if err := ValidateRow(s, valid); err != nil {
		t.Fatal(err)
	}
	row := append([]byte(nil), valid...)
	row[0] |= 1
	if err := ValidateRow(s, row); !errors.Is(err, ErrNullNotAllowed) {
		t.Errorf("null in NOT NULL column: %v does not match ErrNullNotAllowed", err)
	}
}

// TestValidateRowTornAndFlipped checks that truncating the row or flipping any
// single bit never panics, and that ValidateRow accepts no truncation.
func TestValidateRowTornAndFlipped(t *testing.T) {
	s := allTypesSchema()
	e := mustEncoder(t, s)
	fullRow(e)
	valid := mustFinish(t, e)
	for n := range len(valid) {
		if err := ValidateRow(s, valid[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	for bit := range len(valid) * 8 {
		row := append([]byte(nil), valid...)
		row[bit/8] ^= 1 << (bit % 8)
		readAll(s, row)
		if ValidateRow(s, row) == nil {
			// Some flips yield another valid row (a different value); the
			// row must then decode and round-trip through JSON.
			checkValidRowRoundTrip(t, s, row)
		}
	}
}

func TestRowViewIndexPanics(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "a", Type: Int()}}}
	v := NewRowView(s, make([]byte, fixedEnd(1)))
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic for an index out of range")
		}
	}()
	v.Int64(1)
}
