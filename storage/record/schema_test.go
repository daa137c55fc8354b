package record

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// allTypesSchema has a column of every type, nullable and not, and a
// composite primary key.
func allTypesSchema() Schema {
	return Schema{
		Columns: []Column{
			{Name: "id", Type: BigInt()},
			{Name: "region", Type: String()},
			{Name: "flag", Type: Boolean(), Nullable: true},
			{Name: "tiny", Type: TinyInt(), Nullable: true},
			{Name: "small", Type: SmallInt(), Nullable: true},
			{Name: "num", Type: Int(), Nullable: true},
			{Name: "f32", Type: Float(), Nullable: true},
			{Name: "f64", Type: Double(), Nullable: true},
			{Name: "amount", Type: Decimal(10, 2), Nullable: true},
			{Name: "big_amount", Type: Decimal(38, 6), Nullable: true},
			{Name: "note", Type: String(), Nullable: true},
			{Name: "blob", Type: Bytes(), Nullable: true},
			{Name: "day", Type: Date(), Nullable: true},
			{Name: "clock", Type: Time(), Nullable: true},
			{Name: "ts3", Type: Timestamp(3), Nullable: true},
			{Name: "ts9", Type: Timestamp(9), Nullable: true},
			{Name: "ltz6", Type: TimestampLTZ(6), Nullable: true},
			{Name: "ltz9", Type: TimestampLTZ(9), Nullable: true},
		},
		PrimaryKey: []string{"region", "id"},
	}
}

func TestSchemaValidate(t *testing.T) {
	col := func(name string, typ DataType, nullable bool) Column {
		return Column{Name: name, Type: typ, Nullable: nullable}
	}
	tooMany := make([]Column, MaxColumns+1)
	for i := range tooMany {
		tooMany[i] = col("c"+strings.Repeat("x", i%150)+string(rune('a'+i%26)), Int(), true)
	}
	tests := []struct {
		name   string
		schema Schema
		want   string // "" for valid
	}{
		{"all types", allTypesSchema(), ""},
		{"name of 200 bytes", Schema{Columns: []Column{col(strings.Repeat("a", 200), Int(), true)}}, ""},
		{"no columns", Schema{}, "record: schema: no columns"},
		{"too many columns", Schema{Columns: tooMany}, "record: schema: 4097 columns, more than 4096"},
		{"empty name", Schema{Columns: []Column{col("", Int(), true)}}, `record: schema: column 1 "": invalid name`},
		{"name too long", Schema{Columns: []Column{col(strings.Repeat("a", 201), Int(), true)}}, "invalid name"},
		{"name with space", Schema{Columns: []Column{col("a b", Int(), true)}}, `column 1 "a b": invalid name`},
		{"name with dash", Schema{Columns: []Column{col("a", Int(), true), col("a-b", Int(), true)}}, `column 2 "a-b": invalid name`},
		{"duplicate", Schema{Columns: []Column{col("a", Int(), true), col("a", Int(), true)}}, `column 2 "a": duplicate name (also column 1)`},
		{"names are case-sensitive", Schema{Columns: []Column{col("a", Int(), true), col("A", Int(), true)}}, ""},
		{"invalid type", Schema{Columns: []Column{col("a", DataType{}, true)}}, `column 1 "a": invalid type`},
		{"bad decimal", Schema{Columns: []Column{col("a", Decimal(40, 2), true)}}, `column 1 "a": DECIMAL precision 40`},
		{"unknown key", Schema{Columns: []Column{col("a", Int(), false)}, PrimaryKey: []string{"b"}}, `primary key: unknown column "b"`},
		{"duplicate key", Schema{Columns: []Column{col("a", Int(), false)}, PrimaryKey: []string{"a", "a"}}, `primary key: duplicate column "a"`},
		{"nullable key", Schema{Columns: []Column{col("a", Int(), true)}, PrimaryKey: []string{"a"}}, `column 1 "a": primary key column must be NOT NULL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.schema.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want ErrInvalidSchema containing %q", err, tt.want)
			}
		})
	}
}

func TestSchemaColumnIndex(t *testing.T) {
	s := allTypesSchema()
	if i, ok := s.ColumnIndex("amount"); !ok || i != 8 {
		t.Errorf("ColumnIndex(amount) = %d, %v", i, ok)
	}
	if i, ok := s.ColumnIndex("AMOUNT"); ok {
		t.Errorf("ColumnIndex(AMOUNT) = %d, want not found", i)
	}
}

func TestSchemaString(t *testing.T) {
	tests := []struct {
		schema Schema
		want   string
	}{
		{
			Schema{Columns: []Column{{Name: "id", Type: BigInt()}, {Name: "v", Type: Decimal(10, 2), Nullable: true}}, PrimaryKey: []string{"id"}},
			"id BIGINT NOT NULL PRIMARY KEY, v DECIMAL(10,2)",
		},
		{
			Schema{Columns: []Column{{Name: "a", Type: Int()}, {Name: "b", Type: Timestamp(6)}}, PrimaryKey: []string{"b", "a"}},
			"a INT NOT NULL, b TIMESTAMP(6) NOT NULL, PRIMARY KEY (b, a)",
		},
	}
	for _, tt := range tests {
		if got := tt.schema.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	s := allTypesSchema()
	parsed, err := ParseSchema(s.String())
	if err != nil || !parsed.Equal(s) {
		t.Fatalf("ParseSchema(%q) = %v, %v", s.String(), parsed, err)
	}
}

func TestSchemaBinaryRoundTrip(t *testing.T) {
	for _, s := range []Schema{
		allTypesSchema(),
		{Columns: []Column{{Name: "x", Type: Int(), Nullable: true}}},
	} {
		data, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Schema
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		if !got.Equal(s) {
			t.Fatalf("round trip = %v, want %v", got, s)
		}
		appended, err := s.AppendBinary([]byte("prefix"))
		if err != nil || string(appended) != "prefix"+string(data) {
			t.Fatalf("AppendBinary = %q, %v", appended, err)
		}
	}
}

func TestSchemaBinaryGolden(t *testing.T) {
	s := Schema{
		Columns:    []Column{{Name: "id", Type: BigInt()}, {Name: "amt", Type: Decimal(10, 2), Nullable: true}},
		PrimaryKey: []string{"id"},
	}
	want := []byte{
		1,                       // version
		2,                       // columns
		2, 'i', 'd', 5, 0, 0, 0, // id BIGINT NOT NULL
		3, 'a', 'm', 't', 8, 10, 2, 1, // amt DECIMAL(10,2) NULL
		1, 0, // primary key: column 0
	}
	got, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("MarshalBinary = %v, want %v", got, want)
	}
}

func TestSchemaUnmarshalBinaryErrors(t *testing.T) {
	valid, err := Schema{Columns: []Column{{Name: "id", Type: BigInt()}}, PrimaryKey: []string{"id"}}.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), valid...))
	}
	tests := map[string][]byte{
		"empty":                nil,
		"bad version":          mutate(func(b []byte) []byte { b[0] = 2; return b }),
		"no columns":           {1, 0, 0},
		"truncated":            valid[:len(valid)-1],
		"trailing byte":        append(append([]byte(nil), valid...), 0),
		"unknown flag":         mutate(func(b []byte) []byte { b[8] = 2; return b }),
		"bad kind":             mutate(func(b []byte) []byte { b[5] = 99; return b }),
		"params on BIGINT":     mutate(func(b []byte) []byte { b[6] = 1; return b }),
		"nullable key":         mutate(func(b []byte) []byte { b[8] = 1; return b }),
		"key index range":      mutate(func(b []byte) []byte { b[10] = 1; return b }),
		"non-minimal varint":   {1, 0x81, 0x00, 2, 'i', 'd', 5, 0, 0, 0, 0},
		"huge column count":    {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"name past end":        {1, 1, 50, 'i'},
		"invalid column name":  {1, 1, 1, '-', 5, 0, 0, 0, 0},
		"key count past count": mutate(func(b []byte) []byte { b[9] = 2; return b }),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			var s Schema
			err := s.UnmarshalBinary(data)
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("UnmarshalBinary(%v) = %v, want ErrInvalidSchema", data, err)
			}
			if s.Columns != nil {
				t.Fatal("schema changed on error")
			}
		})
	}
}

func TestSchemaJSON(t *testing.T) {
	s := Schema{
		Columns:    []Column{{Name: "id", Type: BigInt()}, {Name: "amount", Type: Decimal(10, 2), Nullable: true}},
		PrimaryKey: []string{"id"},
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"columns":[{"name":"id","type":"BIGINT","nullable":false},` +
		`{"name":"amount","type":"DECIMAL(10,2)","nullable":true}],"primary_key":["id"]}`
	if string(data) != want {
		t.Fatalf("json.Marshal = %s\nwant %s", data, want)
	}
	var got Schema
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(s) {
		t.Fatalf("round trip = %v", got)
	}
	// Types are read as ParseType reads them; "nullable" defaults to false.
	if err := json.Unmarshal([]byte(`{"columns":[{"name":"t","type":"timestamp"}]}`), &got); err != nil {
		t.Fatal(err)
	}
	if want := (Schema{Columns: []Column{{Name: "t", Type: Timestamp(6)}}}); !got.Equal(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	noKey, err := json.Marshal(Schema{Columns: []Column{{Name: "x", Type: Int(), Nullable: true}}})
	if err != nil || string(noKey) != `{"columns":[{"name":"x","type":"INT","nullable":true}]}` {
		t.Fatalf("json.Marshal without key = %s, %v", noKey, err)
	}
}

func TestSchemaJSONErrors(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"columns":[]}`,
		`{"columns":[{"name":"a","type":"INTEGERS"}]}`,
		`{"columns":[{"name":"a","type":"INT","extra":1}]}`,
		`{"columns":[{"name":"a","type":"INT"}],"version":3}`,
		`{"columns":[{"name":"a","type":"INT","nullable":true}],"primary_key":["a"]}`,
		`{"columns":[{"name":"a","type":5}]}`,
		`[]`,
		`{"columns":[{"name":"a","type":"INT"}]} {}`,
	} {
		t.Run(in, func(t *testing.T) {
			var s Schema
			err := s.UnmarshalJSON([]byte(in))
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("UnmarshalJSON = %v, want ErrInvalidSchema", err)
			}
			if s.Columns != nil {
				t.Fatal("schema changed on error")
			}
		})
	}
}
