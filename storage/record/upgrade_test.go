package record

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// jsonRow encodes a JSON object under s.
func jsonRow(t *testing.T, s Schema, object string) []byte {
	t.Helper()
	c, err := NewJSONCodec(s)
	if err != nil {
		t.Fatal(err)
	}
	row, err := c.AppendRow(nil, []byte(object))
	if err != nil {
		t.Fatal(err)
	}
	return row
}

func rowJSON(t *testing.T, s Schema, row []byte) string {
	t.Helper()
	if err := ValidateRow(s, row); err != nil {
		t.Fatalf("converted row invalid: %v", err)
	}
	c, err := NewJSONCodec(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.AppendJSON(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// widened is s with n nullable columns added, of alternating types, so
// that the bitmap grows past a byte boundary for large n.
func widened(s Schema, n int) Schema {
	out := Schema{Columns: append([]Column(nil), s.Columns...), PrimaryKey: s.PrimaryKey}
	for i := range n {
		typ := "STRING"
		if i%2 == 1 {
			typ = "BIGINT"
		}
		dt, _ := ParseType(typ)
		out.Columns = append(out.Columns, Column{Name: fmt.Sprintf("added_%d", i), Type: dt, Nullable: true})
	}
	return out
}

func TestConvertRow(t *testing.T) {
	v1, err := ParseSchema("id BIGINT NOT NULL, name STRING, note STRING, amount DECIMAL(30,2), tag STRING, PRIMARY KEY (id)")
	if err != nil {
		t.Fatal(err)
	}
	rows := []string{
		`{"id":7,"name":"hello, world","note":"hi","amount":12345678901234567890.50,"tag":null}`,
		`{"id":8,"name":null,"note":null,"amount":null,"tag":null}`,
		`{"id":9,"name":"short","note":"a much longer note than seven bytes","amount":1.00,"tag":"t"}`,
	}
	for _, added := range []int{1, 2, 3, 4, 11} { // 5+3 = 8 columns: one bitmap byte; 5+4, 5+11: two or more
		v2 := widened(v1, added)
		for _, obj := range rows {
			t.Run(fmt.Sprintf("%d added/%s", added, obj[:8]), func(t *testing.T) {
				old := jsonRow(t, v1, obj)
				up, err := UpgradeRow(v1, v2, old, []byte("prefix"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(string(up), "prefix") {
					t.Fatal("dst overwritten")
				}
				up = up[len("prefix"):]
				want := strings.TrimSuffix(obj, "}")
				for i := range added {
					want += fmt.Sprintf(`,"added_%d":null`, i)
				}
				if got := rowJSON(t, v2, up); got != want+"}" {
					t.Fatalf("upgraded %s\nwant     %s}", got, want)
				}
				// Down again: the same bytes as the original row.
				down, err := ConvertRow(v2, v1, up, nil)
				if err != nil || string(down) != string(old) {
					t.Fatalf("ConvertRow back = %x, %v; want %x", down, err, old)
				}
				// A row of the wider schema with values in the added
				// columns loses them going down.
				full := strings.TrimSuffix(obj, "}")
				for i := range added {
					if i%2 == 1 {
						full += fmt.Sprintf(`,"added_%d":%d`, i, i)
					} else {
						full += fmt.Sprintf(`,"added_%d":"a value longer than an inline one %d"`, i, i)
					}
				}
				wide := jsonRow(t, v2, full+"}")
				if got, err := ConvertRow(v2, v1, wide, nil); err != nil || rowJSON(t, v1, got) != obj {
					t.Fatalf("ConvertRow down = %v; want %s", err, obj)
				}
			})
		}
	}
}

func TestConvertRowRefusesOtherSchemas(t *testing.T) {
	v1, _ := ParseSchema("id BIGINT NOT NULL, name STRING")
	tests := []struct {
		name string
		to   string
	}{
		{"renamed", "id BIGINT NOT NULL, label STRING, x INT"},
		{"retyped", "id INT NOT NULL, name STRING, x INT"},
		{"added not null", "id BIGINT NOT NULL, name STRING, x INT NOT NULL"},
	}
	row := jsonRow(t, v1, `{"id":1,"name":"n"}`)
	for _, tt := range tests {
		to, err := ParseSchema(tt.to)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := UpgradeRow(v1, to, row, nil); !errors.Is(err, ErrSchemaMismatch) {
			t.Errorf("%s: UpgradeRow = %v; want ErrSchemaMismatch", tt.name, err)
		}
	}
	if _, err := UpgradeRow(v1, widened(v1, 1), row[:5], nil); !errors.Is(err, ErrSchemaMismatch) {
		t.Errorf("short row: %v", err)
	}
}
