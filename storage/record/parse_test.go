package record

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSchema(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Schema
	}{
		{
			name: "brief example",
			src:  "id BIGINT NOT NULL, name STRING, amount DECIMAL(10,2)",
			want: Schema{Columns: []Column{
				{Name: "id", Type: BigInt()},
				{Name: "name", Type: String(), Nullable: true},
				{Name: "amount", Type: Decimal(10, 2), Nullable: true},
			}},
		},
		{
			name: "case-insensitive keywords and aliases",
			src: "a bool null, b integer, c varchar not null, d text, e bytea, f varbinary, " +
				"g Numeric, h dec(5), i TIMESTAMP, j timestamp_ltz(3), k tinyint, l smallint, m float, n double, o date, p time, q varbinary, r VARCHAR",
			want: Schema{Columns: []Column{
				{Name: "a", Type: Boolean(), Nullable: true},
				{Name: "b", Type: Int(), Nullable: true},
				{Name: "c", Type: String()},
				{Name: "d", Type: String(), Nullable: true},
				{Name: "e", Type: Bytes(), Nullable: true},
				{Name: "f", Type: Bytes(), Nullable: true},
				{Name: "g", Type: Decimal(10, 0), Nullable: true},
				{Name: "h", Type: Decimal(5, 0), Nullable: true},
				{Name: "i", Type: Timestamp(6), Nullable: true},
				{Name: "j", Type: TimestampLTZ(3), Nullable: true},
				{Name: "k", Type: TinyInt(), Nullable: true},
				{Name: "l", Type: SmallInt(), Nullable: true},
				{Name: "m", Type: Float(), Nullable: true},
				{Name: "n", Type: Double(), Nullable: true},
				{Name: "o", Type: Date(), Nullable: true},
				{Name: "p", Type: Time(), Nullable: true},
				{Name: "q", Type: Bytes(), Nullable: true},
				{Name: "r", Type: String(), Nullable: true},
			}},
		},
		{
			name: "column primary key",
			src:  "id BIGINT NOT NULL PRIMARY KEY, v STRING",
			want: Schema{
				Columns:    []Column{{Name: "id", Type: BigInt()}, {Name: "v", Type: String(), Nullable: true}},
				PrimaryKey: []string{"id"},
			},
		},
		{
			name: "primary key before not null",
			src:  "id BIGINT primary key not null",
			want: Schema{Columns: []Column{{Name: "id", Type: BigInt()}}, PrimaryKey: []string{"id"}},
		},
		{
			name: "table primary key in key order",
			src:  "a INT NOT NULL, b STRING NOT NULL, PRIMARY KEY (b, a)",
			want: Schema{
				Columns:    []Column{{Name: "a", Type: Int()}, {Name: "b", Type: String()}},
				PrimaryKey: []string{"b", "a"},
			},
		},
		{
			name: "white space and newlines",
			src:  "\n\tId   DECIMAL ( 38 , 10 )  NOT\nNULL ,\r\nprimary TIMESTAMP(9)\n",
			want: Schema{Columns: []Column{
				{Name: "Id", Type: Decimal(38, 10)},
				{Name: "primary", Type: Timestamp(9), Nullable: true},
			}},
		},
		{
			name: "keywords as column names",
			src:  "not INT, null INT, key INT, int INT",
			want: Schema{Columns: []Column{
				{Name: "not", Type: Int(), Nullable: true},
				{Name: "null", Type: Int(), Nullable: true},
				{Name: "key", Type: Int(), Nullable: true},
				{Name: "int", Type: Int(), Nullable: true},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSchema(tt.src)
			if err != nil {
				t.Fatalf("ParseSchema: %v", err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("ParseSchema = %+v\nwant %+v", got, tt.want)
			}
			again, err := ParseSchema(got.String())
			if err != nil || !again.Equal(got) {
				t.Fatalf("re-parse of %q = %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"", "record: schema: no columns"},
		{"   ", "record: schema: no columns"},
		{"id BIGINT, amount DECIMALS", `record: schema: column 2 "amount": unknown type "DECIMALS"; supported types: ` + SupportedTypes},
		{"id", `record: schema: column 1 "id": expected a type, found the end at offset 2`},
		{"id BIGINT,", `record: schema: column 2: expected a column name, found the end at offset 10`},
		{"id BIGINT,, x INT", `record: schema: column 2: expected a column name, found "," at offset 10`},
		{"id BIGINT NOT", `record: schema: column 1 "id": expected NULL after NOT, found the end at offset 13`},
		{"id BIGINT NULL NOT NULL", `record: schema: column 1 "id": NULL or NOT NULL said twice`},
		{"id BIGINT PRIMARY", `record: schema: column 1 "id": expected KEY after PRIMARY, found the end at offset 17`},
		{"id BIGINT PRIMARY KEY", `record: schema: column 1 "id": primary key column must be NOT NULL`},
		{"id BIGINT NULL PRIMARY KEY", `record: schema: column 1 "id": primary key column must be NOT NULL`},
		{"id BIGINT NOT NULL PRIMARY KEY PRIMARY KEY", `record: schema: column 1 "id": PRIMARY KEY said twice`},
		{"a INT NOT NULL PRIMARY KEY, b INT NOT NULL PRIMARY KEY", `record: schema: column 2 "b": more than one primary key`},
		{"a INT NOT NULL PRIMARY KEY, PRIMARY KEY (a)", "record: schema: more than one primary key"},
		{"a INT NOT NULL, PRIMARY KEY (b)", `record: schema: primary key: unknown column "b"`},
		{"a INT NOT NULL, PRIMARY KEY (a, a)", `record: schema: primary key: duplicate column "a"`},
		{"a INT NOT NULL, PRIMARY KEY a", `record: schema: primary key: expected "(", found "a" at offset 28`},
		{"a INT NOT NULL, PRIMARY KEY ()", `record: schema: primary key: expected a column name, found ")" at offset 29`},
		{"a INT NOT NULL, PRIMARY KEY (a", `record: schema: primary key: expected "," or ")", found the end at offset 30`},
		{"a INT NOT NULL, PRIMARY KEY (a) x", `record: schema: primary key: expected "," or the end, found "x" at offset 32`},
		{"a INT, a STRING", `record: schema: column 2 "a": duplicate name (also column 1)`},
		{"id INT, ID BIGINT", `record: schema: column 2 "ID": same name as column 1 "id" but for case; names must differ in more than case`},
		{"a INT, Name STRING, NAME STRING", `record: schema: column 3 "NAME": same name as column 2 "Name" but for case; names must differ in more than case`},
		{"a INT UNIQUE", `record: schema: column 1 "a": expected NOT NULL, NULL, PRIMARY KEY, "," or the end, found "UNIQUE" at offset 6`},
		{"a INT)", `record: schema: column 1 "a": expected "," or the end, found ")" at offset 5`},
		{"a INT(3)", `record: schema: column 1 "a": type INT takes no parameters`},
		{"a DECIMAL(1,2,3)", `record: schema: column 1 "a": type DECIMAL takes at most 2 parameters`},
		{"a DECIMAL(39)", `record: schema: column 1 "a": DECIMAL precision 39 out of range [1, 38]`},
		{"a DECIMAL(0)", `record: schema: column 1 "a": DECIMAL precision 0 out of range [1, 38]`},
		{"a DECIMAL(5,6)", `record: schema: column 1 "a": DECIMAL scale 6 out of range [0, 5]`},
		{"a DECIMAL(x)", `record: schema: column 1 "a": DECIMAL: expected a type parameter, found "x" at offset 10`},
		{"a DECIMAL(99999999999999999999)", `record: schema: column 1 "a": DECIMAL: expected a type parameter, found "99999999999999999999" at offset 10`},
		{"a DECIMAL(5 6)", `record: schema: column 1 "a": DECIMAL: expected "," or ")", found "6" at offset 12`},
		{"a TIMESTAMP(10)", `record: schema: column 1 "a": TIMESTAMP precision 10 out of range [0, 9]`},
		{"a TIMESTAMP WITH LOCAL TIME ZONE", `record: schema: column 1 "a": expected NOT NULL, NULL, PRIMARY KEY, "," or the end, found "WITH" at offset 12`},
		{"a VARCHAR(20)", `record: schema: column 1 "a": type VARCHAR(n) is not supported: Floe does not enforce lengths; use STRING (or VARCHAR without a length)`},
		{"a CHAR(3)", `record: schema: column 1 "a": type CHAR(n) is not supported: Floe does not enforce lengths; use STRING (or VARCHAR without a length)`},
		{"a char", `record: schema: column 1 "a": type CHAR(n) is not supported: Floe does not enforce lengths; use STRING (or VARCHAR without a length)`},
		{"a VARBINARY(16)", `record: schema: column 1 "a": type VARBINARY(n) is not supported: Floe does not enforce lengths; use BYTES (or VARBINARY without a length)`},
		{"a BINARY(16)", `record: schema: column 1 "a": type BINARY(n) is not supported: Floe does not enforce lengths; use BYTES (or VARBINARY without a length)`},
		{"a-b INT", `record: schema: column 1 "a": expected a type, found "-" at offset 1`},
		{"é INT", `record: schema: column 1: expected a column name, found "é" at offset 0`},
		{"a" + strings.Repeat("x", 200) + " INT", `record: schema: column 1 "a` + strings.Repeat("x", 200) + `": invalid name (want 1 to 200 characters of A-Z, a-z, 0-9, _)`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			s, err := ParseSchema(tt.src)
			if err == nil {
				t.Fatalf("ParseSchema succeeded: %v", s)
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("error %v does not match ErrInvalidSchema", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestParseType(t *testing.T) {
	if _, err := ParseType(""); err == nil || err.Error() != "record: schema: type: expected a type, found the end at offset 0" {
		t.Errorf("ParseType(\"\") error = %v", err)
	}
	for _, bad := range []string{"", "INT NOT NULL", "DECIMAL(", "FOO", "INT,"} {
		if typ, err := ParseType(bad); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("ParseType(%q) = %v, %v; want ErrInvalidSchema", bad, typ, err)
		}
	}
}

// TestStoredSchemaWithCaseTwins checks a stored schema whose column names
// differ only in case, which builds before the parser refused them stored,
// still parses as stored, while a new one is refused.
func TestStoredSchemaWithCaseTwins(t *testing.T) {
	const src = "id INT NOT NULL, ID BIGINT, PRIMARY KEY (id)"
	if _, err := ParseSchema(src); err == nil || !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("a new schema with case twins: %v", err)
	}
	s, err := ParseStoredSchema(src)
	if err != nil || len(s.Columns) != 2 || s.Columns[1].Name != "ID" {
		t.Fatalf("the stored schema: %+v, %v", s, err)
	}
}
