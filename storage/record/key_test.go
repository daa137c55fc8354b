package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func keyTestSchema(t testing.TB) Schema {
	t.Helper()
	s, err := ParseSchema("id BIGINT NOT NULL, region STRING, amount DECIMAL(30,2), ts TIMESTAMP(9), " +
		"day DATE, score DOUBLE, blob BYTES, note STRING")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKeyEncoderMatchesKeyRow(t *testing.T) {
	s := keyTestSchema(t)
	rows := []string{
		`{"id":1,"region":"eu","amount":"12.50","ts":"2024-01-02T03:04:05.123456789","day":"2024-01-02","score":1.5,"blob":"AAE=","note":"x"}`,
		`{"id":-7,"region":"a region name longer than seven bytes","amount":"-123456789012345678901234.99","ts":"1969-12-31T23:59:59.999999999","day":"1900-01-01","score":-0.0,"blob":"` +
			strings.Repeat("QUJD", 10) + `","note":null}`,
		`{"id":0,"region":"","amount":0,"ts":"2000-01-01T00:00:00","day":"2000-01-01","score":0,"blob":"","note":"y"}`,
	}
	keys := [][]string{
		{"id"},
		{"region"},
		{"region", "id"},
		{"amount", "ts", "blob", "day", "score"},
	}
	for _, key := range keys {
		t.Run(strings.Join(key, ","), func(t *testing.T) {
			k, err := NewKeyEncoder(s, key)
			if err != nil {
				t.Fatal(err)
			}
			ks := k.KeySchema()
			for _, c := range ks.Columns {
				if c.Nullable {
					t.Fatalf("key column %q is nullable", c.Name)
				}
			}
			for _, obj := range rows {
				row, err := AppendRowFromJSON(nil, s, []byte(obj))
				if err != nil {
					t.Fatal(err)
				}
				got, err := k.AppendKey([]byte("prefix"), row)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(got, []byte("prefix")) {
					t.Fatal("AppendKey changed dst's prefix")
				}
				got = got[len("prefix"):]
				if err := ValidateRow(ks, got); err != nil {
					t.Fatalf("key does not validate under the key schema: %v", err)
				}
				// The same values encoded directly as a row of the key schema.
				full, err := AppendRowJSON(nil, s, row)
				if err != nil {
					t.Fatal(err)
				}
				want := keyRowFromJSON(t, s, ks, full)
				if !bytes.Equal(got, want) {
					t.Fatalf("key\n got %x\nwant %x", got, want)
				}
			}
		})
	}
}

// keyRowFromJSON encodes the key columns of the JSON object of a full row as
// a row of the key schema.
func keyRowFromJSON(t *testing.T, s, ks Schema, full []byte) []byte {
	t.Helper()
	view := NewRowView(s, mustRowFromJSON(t, s, full))
	enc := mustEncoder(t, ks)
	for i, c := range ks.Columns {
		ci, _ := s.ColumnIndex(c.Name)
		switch c.Type.Kind() {
		case KindBigInt, KindDate:
			enc.SetInt64(i, view.Int64(ci))
		case KindString:
			enc.SetString(i, view.String(ci))
		case KindDecimal:
			enc.SetDecimalBig(i, view.DecimalBig(ci))
		case KindTimestamp:
			ms, ns := view.Timestamp(ci)
			enc.SetTimestamp(i, ms, ns)
		case KindDouble:
			enc.SetFloat64(i, view.Float64(ci))
		case KindBytes:
			enc.SetBytes(i, view.Bytes(ci))
		default:
			t.Fatalf("no setter for %v", c.Type)
		}
	}
	return mustFinish(t, enc)
}

func mustRowFromJSON(t *testing.T, s Schema, obj []byte) []byte {
	t.Helper()
	row, err := AppendRowFromJSON(nil, s, obj)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

func TestKeyEncoderIgnoresOtherColumns(t *testing.T) {
	s := keyTestSchema(t)
	k, err := NewKeyEncoder(s, []string{"region", "id"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustRowFromJSON(t, s, []byte(`{"id":5,"region":"eu-west-1","note":"one"}`))
	b := mustRowFromJSON(t, s, []byte(`{"id":5,"region":"eu-west-1","note":"another note","score":3}`))
	ka, _ := k.AppendKey(nil, a)
	kb, _ := k.AppendKey(nil, b)
	if !bytes.Equal(ka, kb) {
		t.Fatal("rows with equal key columns have different keys")
	}
	c := mustRowFromJSON(t, s, []byte(`{"id":6,"region":"eu-west-1"}`))
	if kc, _ := k.AppendKey(nil, c); bytes.Equal(ka, kc) {
		t.Fatal("rows with different key columns have equal keys")
	}
}

func TestKeyEncoderNullKey(t *testing.T) {
	s := keyTestSchema(t)
	k, err := NewKeyEncoder(s, []string{"id", "region"})
	if err != nil {
		t.Fatal(err)
	}
	row := mustRowFromJSON(t, s, []byte(`{"id":5}`))
	dst := []byte("keep")
	got, err := k.AppendKey(dst, row)
	var ce *ColumnError
	if !errors.Is(err, ErrNullNotAllowed) || !errors.As(err, &ce) || ce.Column != "region" {
		t.Fatalf("err = %v, want a null error about column region", err)
	}
	if string(got) != "keep" {
		t.Fatalf("dst changed on error: %q", got)
	}
}

func TestNewKeyEncoderErrors(t *testing.T) {
	s := keyTestSchema(t)
	for _, key := range [][]string{nil, {"nope"}, {"id", "id"}} {
		if _, err := NewKeyEncoder(s, key); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("NewKeyEncoder(%q): err = %v, want ErrInvalidSchema", key, err)
		}
	}
	if _, err := NewKeyEncoder(Schema{}, []string{"id"}); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("invalid row schema: err = %v", err)
	}
}

// FuzzKeyEncoder feeds arbitrary bytes as rows: AppendKey never panics, and
// the key of a valid row is a valid row of the key schema.
func FuzzKeyEncoder(f *testing.F) {
	schemas := fuzzSchemas()
	e := mustEncoder(f, schemas[1])
	e.SetString(0, "a longer string value")
	e.SetBytes(1, []byte("b"))
	f.Add(uint8(1), mustFinish(f, e))
	f.Add(uint8(0), []byte{})
	f.Add(uint8(2), make([]byte, fixedEnd(9)))
	f.Fuzz(func(t *testing.T, which uint8, row []byte) {
		s := schemas[int(which)%len(schemas)]
		names := make([]string, 0, len(s.Columns))
		for i := len(s.Columns) - 1; i >= 0; i -= 2 {
			names = append(names, s.Columns[i].Name)
		}
		k, err := NewKeyEncoder(s, names)
		if err != nil {
			t.Fatal(err)
		}
		key, err := k.AppendKey(nil, row)
		if ValidateRow(s, row) != nil || err != nil {
			return
		}
		if err := ValidateRow(k.KeySchema(), key); err != nil {
			t.Fatalf("key of a valid row is invalid: %v", err)
		}
	})
}
