package partition_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"pgregory.net/rapid"

	"github.com/floedb/floe/internal/partition"
)

// tableColumns is a table with a column of every kind, and some that
// cannot partition it.
var tableColumns = []partition.Column{
	{Name: "region", Type: "STRING"},
	{Name: "n", Type: "INT"},
	{Name: "dt", Type: "DATE"},
	{Name: "tiny", Type: "TINYINT"},
	{Name: "small", Type: "SMALLINT"},
	{Name: "id", Type: "BIGINT"},
	{Name: "note", Type: "STRING", Nullable: true},
	{Name: "score", Type: "DOUBLE"},
	{Name: "tags", Type: "ARRAY<INT>"},
	{Name: "at", Type: "TIMESTAMP(3)"},
}

// newSpec returns the spec of tableColumns partitioned by keys, with no
// primary key.
func newSpec(t testing.TB, keys ...string) partition.Spec {
	t.Helper()
	s, err := partition.NewSpec(tableColumns, nil, keys)
	if err != nil {
		t.Fatalf("NewSpec(%q): %v", keys, err)
	}
	return s
}

// wantInvalid fails t unless err is ErrInvalid with a message holding want.
func wantInvalid(t testing.TB, err error, want string) {
	t.Helper()
	if !errors.Is(err, partition.ErrInvalid) {
		t.Fatalf("error %v, want ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestNewSpecRefuses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		primaryKey []string
		keys       []string
		want       string
	}{
		{"unknown column", nil, []string{"dt", "nope"}, `partition column "nope" is not a column of the table`},
		{"column twice", nil, []string{"dt", "region", "dt"}, `partition column "dt" named twice`},
		{"nullable", nil, []string{"note"}, `partition column "note" is nullable`},
		{"DOUBLE", nil, []string{"score"}, `partition column "score" is DOUBLE; partition columns are STRING, TINYINT, SMALLINT, INT, BIGINT or DATE`},
		{"ARRAY", nil, []string{"tags"}, `partition column "tags" is ARRAY<INT>`},
		{"TIMESTAMP", nil, []string{"at"}, `partition column "at" is TIMESTAMP(3)`},
		{"outside the primary key", []string{"id", "dt"}, []string{"dt", "region"}, `partition column "region" is not in the primary key (id, dt)`},
		{"more than MaxKeys", nil, []string{"region", "n", "dt", "tiny", "small"}, "5 partition columns, at most 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := partition.NewSpec(tableColumns, tc.primaryKey, tc.keys)
			wantInvalid(t, err, tc.want)
			if s.Partitioned() {
				t.Fatalf("refused spec %+v partitions", s)
			}
		})
	}
}

func TestNewSpecAccepts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		primaryKey []string
		keys       []string
		want       []partition.Key
	}{
		{"no keys", nil, nil, nil},
		{"STRING", nil, []string{"region"}, []partition.Key{{Name: "region", Column: 0, Kind: partition.String}}},
		{"TINYINT", nil, []string{"tiny"}, []partition.Key{{Name: "tiny", Column: 3, Kind: partition.Int}}},
		{"SMALLINT", nil, []string{"small"}, []partition.Key{{Name: "small", Column: 4, Kind: partition.Int}}},
		{"INT", nil, []string{"n"}, []partition.Key{{Name: "n", Column: 1, Kind: partition.Int}}},
		{"BIGINT", nil, []string{"id"}, []partition.Key{{Name: "id", Column: 5, Kind: partition.Int}}},
		{"DATE", nil, []string{"dt"}, []partition.Key{{Name: "dt", Column: 2, Kind: partition.Date}}},
		{"MaxKeys in the given order", nil, []string{"dt", "region", "id", "n"}, []partition.Key{
			{Name: "dt", Column: 2, Kind: partition.Date},
			{Name: "region", Column: 0, Kind: partition.String},
			{Name: "id", Column: 5, Kind: partition.Int},
			{Name: "n", Column: 1, Kind: partition.Int},
		}},
		{"columns of the primary key", []string{"id", "dt"}, []string{"dt"}, []partition.Key{{Name: "dt", Column: 2, Kind: partition.Date}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := partition.NewSpec(tableColumns, tc.primaryKey, tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Keys, tc.want) {
				t.Fatalf("keys %+v, want %+v", s.Keys, tc.want)
			}
			if s.Partitioned() != (len(tc.want) > 0) {
				t.Fatalf("Partitioned() = %v with %d keys", s.Partitioned(), len(tc.want))
			}
			if !slices.Equal(s.Names(), tc.keys) {
				t.Fatalf("Names() = %q, want %q", s.Names(), tc.keys)
			}
		})
	}
}

func TestNewSpecTypeNamesInAnyCase(t *testing.T) {
	columns := []partition.Column{{Name: "d", Type: "date"}, {Name: "b", Type: "BigInt"}}
	s, err := partition.NewSpec(columns, nil, []string{"d", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Keys[0].Kind != partition.Date || s.Keys[1].Kind != partition.Int {
		t.Fatalf("keys %+v", s.Keys)
	}
}

func TestCanonical(t *testing.T) {
	str := partition.Key{Name: "region", Kind: partition.String}
	num := partition.Key{Name: "n", Kind: partition.Int}
	day := partition.Key{Name: "dt", Kind: partition.Date}
	for _, tc := range []struct {
		key  partition.Key
		in   string
		want string
	}{
		{num, "7", "7"},
		{num, "+007", "7"},
		{num, "-007", "-7"},
		{num, "-0", "0"},
		{num, " 42 ", "42"},
		{num, "9223372036854775807", "9223372036854775807"},
		{num, "-9223372036854775808", "-9223372036854775808"},
		{day, "2026-12-03", "2026-12-03"},
		{day, "2024-02-29", "2024-02-29"},
		{day, "0000-01-01", "0000-01-01"},
		{day, "9999-12-31", "9999-12-31"},
		{day, " 2026-12-03 ", "2026-12-03"},
		{str, "eu", "eu"},
		{str, "eu west", "eu west"},
		{str, "Köln-€-🙂", "Köln-€-🙂"},
		{str, "a<b>!c", "a<b>!c"},
		{str, strings.Repeat("x", partition.MaxValueBytes), strings.Repeat("x", partition.MaxValueBytes)},
	} {
		got, err := tc.key.Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s Canonical(%q) = %q, %v; want %q", tc.key.Name, tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	str := partition.Key{Name: "region", Kind: partition.String}
	num := partition.Key{Name: "n", Kind: partition.Int}
	day := partition.Key{Name: "dt", Kind: partition.Date}
	for _, tc := range []struct {
		key  partition.Key
		in   string
		want string
	}{
		{num, "", "is not an integer"},
		{num, "1.5", "is not an integer"},
		{num, "0x10", "is not an integer"},
		{num, "1_000", "is not an integer"},
		{num, "9223372036854775808", "is not an integer"},
		{day, "", "is not a date"},
		{day, "2026-02-30", `"2026-02-30" of dt is not a date (YYYY-MM-DD)`},
		{day, "2025-02-29", "is not a date"},
		{day, "2026-13-01", "is not a date"},
		{day, "2026-2-3", "is not a date"},
		{day, "2026-12-03T00", "is not a date"},
		{day, "20261203", "is not a date"},
		{str, "", "empty partition value of region"},
		{str, "a/b", "holds one of / = ,"},
		{str, "a=b", "holds one of / = ,"},
		{str, "a,b", "holds one of / = ,"},
		{str, "a\tb", "holds a control character"},
		{str, "a\x00b", "holds a control character"},
		{str, "a\u0085b", "holds a control character"},
		{str, "a\x7fb", "holds a control character"},
		{str, "a\xffb", "is not valid UTF-8"},
		{str, " eu", "starts or ends with white space"},
		{str, "eu\u00a0", "starts or ends with white space"},
		{str, " ", "starts or ends with white space"},
		{str, strings.Repeat("x", partition.MaxValueBytes+1), "129 bytes, more than 128"},
		{str, strings.Repeat("é", partition.MaxValueBytes/2+1), "130 bytes, more than 128"},
	} {
		got, err := tc.key.Canonical(tc.in)
		if err == nil {
			t.Errorf("%s Canonical(%q) = %q, want an error saying %q", tc.key.Name, tc.in, got, tc.want)
			continue
		}
		wantInvalid(t, err, tc.want)
	}
}

// genValue draws a canonical value of a key of kind k.
func genValue(t *rapid.T, k partition.Kind, label string) string {
	switch k {
	case partition.Int:
		return strconv.FormatInt(rapid.Int64().Draw(t, label), 10)
	case partition.Date:
		return dayText(rapid.Int64Range(minDateDays, maxDateDays).Draw(t, label))
	}
	// Letters, digits, punctuation, symbols and spaces of any script, but
	// none of / = , and no space at the ends.
	r := rapid.RuneFrom(nil, unicode.L, unicode.N, unicode.P, unicode.S, unicode.Zs).
		Filter(func(r rune) bool { return !strings.ContainsRune("/=,", r) })
	return rapid.StringOfN(r, 1, 40, partition.MaxValueBytes).
		Filter(func(s string) bool { return strings.TrimSpace(s) == s }).Draw(t, label)
}

// The DATE range in days since 1970-01-01: 0000-01-01 to 9999-12-31.
const (
	minDateDays = -719_528
	maxDateDays = 2_932_896
)

func dayText(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format(time.DateOnly)
}

// genValues draws canonical values of every key of s.
func genValues(t *rapid.T, s partition.Spec) []string {
	values := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		values[i] = genValue(t, k.Kind, k.Name)
	}
	return values
}

// genSpelling draws a way to write canonical value v of a key of kind k
// that Canonical reads back as v: integers with sign clutter and leading
// zeros, integers and dates with white space around them.
func genSpelling(t *rapid.T, k partition.Kind, v, label string) string {
	if k == partition.String {
		return v
	}
	if k == partition.Int && rapid.Bool().Draw(t, label+" clutter") {
		digits, minus := strings.CutPrefix(v, "-")
		sign := "+"
		if minus {
			sign = "-"
		}
		v = sign + strings.Repeat("0", rapid.IntRange(0, 3).Draw(t, label+" zeros")) + digits
	}
	space := rapid.SampledFrom([]string{"", " ", "  ", "\t"})
	return space.Draw(t, label+" before") + v + space.Draw(t, label+" after")
}

func TestNameParseRoundTrip(t *testing.T) {
	specs := []partition.Spec{newSpec(t, "region"), newSpec(t, "n"), newSpec(t, "dt"), newSpec(t, "dt", "region", "id", "n")}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.SampledFrom(specs).Draw(t, "spec")
		values := genValues(t, s)
		checked, err := s.Check(values)
		if err != nil || !slices.Equal(checked, values) {
			t.Fatalf("Check(%q) = %q, %v; canonical values are their own canonical text", values, checked, err)
		}
		name := s.Name(values)
		parsed, err := s.Parse(name)
		if err != nil || !slices.Equal(parsed, values) {
			t.Fatalf("Parse(%q) = %q, %v; want %q", name, parsed, err, values)
		}
	})
}

func TestParseTakesPairsInAnyOrderAndSpelling(t *testing.T) {
	s := newSpec(t, "dt", "region", "id", "n")
	rapid.Check(t, func(t *rapid.T) {
		values := genValues(t, s)
		order := rapid.Permutation([]int{0, 1, 2, 3}).Draw(t, "order")
		var b strings.Builder
		for j, i := range order {
			if j > 0 {
				b.WriteString(rapid.SampledFrom([]string{"/", ","}).Draw(t, "separator"))
			}
			k := s.Keys[i]
			b.WriteString(k.Name + rapid.SampledFrom([]string{"=", " = "}).Draw(t, "equals"))
			b.WriteString(genSpelling(t, k.Kind, values[i], k.Name))
		}
		parsed, err := s.Parse(b.String())
		if err != nil || !slices.Equal(parsed, values) {
			t.Fatalf("Parse(%q) = %q, %v; want %q", b.String(), parsed, err, values)
		}
	})
}

func TestCanonicalIsIdempotent(t *testing.T) {
	kinds := []partition.Kind{partition.String, partition.Int, partition.Date}
	rapid.Check(t, func(t *rapid.T) {
		k := partition.Key{Name: "k", Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		var in string
		if rapid.Bool().Draw(t, "any text") {
			in = rapid.StringOfN(rapid.Rune(), 0, 20, -1).Draw(t, "text")
		} else {
			in = genSpelling(t, k.Kind, genValue(t, k.Kind, "value"), "spelling")
		}
		c, err := k.Canonical(in)
		if err != nil {
			if !errors.Is(err, partition.ErrInvalid) {
				t.Fatalf("Canonical(%q): %v, not ErrInvalid", in, err)
			}
			return
		}
		again, err := k.Canonical(c)
		if err != nil || again != c {
			t.Fatalf("Canonical(%q) = %q, and of that %q, %v", in, c, again, err)
		}
	})
}

func TestParseBareValue(t *testing.T) {
	for _, tc := range []struct {
		key, name, want string
	}{
		{"dt", "2026-12-03", "2026-12-03"},
		{"n", "+007", "7"},
		{"region", "eu", "eu"},
	} {
		got, err := newSpec(t, tc.key).Parse(tc.name)
		if err != nil || !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s Parse(%q) = %q, %v; want [%q]", tc.key, tc.name, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	two := newSpec(t, "region", "dt")
	for _, tc := range []struct {
		name string
		spec partition.Spec
		in   string
		want string
	}{
		{"not partitioned", partition.Spec{}, "dt=2026-12-03", "the table is not partitioned"},
		{"bare value of two keys", two, "eu", `"eu" in partition "eu" is not key=value`},
		{"a pair without =", two, "region=eu/2026-12-03", `"2026-12-03" in partition "region=eu/2026-12-03" is not key=value`},
		{"unknown key", two, "region=eu/day=2026-12-03", `"day" is not a partition column (region, dt)`},
		{"key twice", two, "region=eu/region=us/dt=2026-12-03", `partition column "region" given twice`},
		{"key missing", two, "region=eu", `partition "region=eu" has no value for dt`},
		{"empty name", two, "", `partition "" has no value for region`},
		{"bad value", two, "region=eu/dt=2026-02-30", `"2026-02-30" of dt is not a date`},
		{"empty value", two, "region=/dt=2026-12-03", "empty partition value of region"},
		{"bad bare value", newSpec(t, "dt"), "2026-02-30", "is not a date"},
		{"bare value with a slash", newSpec(t, "region"), "eu/us", "holds one of / = ,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want an error", tc.in, got)
			}
			wantInvalid(t, err, tc.want)
		})
	}
}

func TestCheckRefusesWrongCount(t *testing.T) {
	s := newSpec(t, "region", "dt")
	_, err := s.Check([]string{"eu"})
	wantInvalid(t, err, "1 partition values for 2 partition columns (region, dt)")
}

// fakeRow is a row of tableColumns' shape: nil is null, int64 an integer
// or DATE, string a STRING.
type fakeRow []any

func (r fakeRow) NumColumns() int     { return len(r) }
func (r fakeRow) IsNull(i int) bool   { return r[i] == nil }
func (r fakeRow) Int64(i int) int64   { return r[i].(int64) }
func (r fakeRow) String(i int) string { return r[i].(string) }

// row returns a row of tableColumns with region, n and dt set.
func row(region any, n any, dt any) fakeRow {
	return fakeRow{region, n, dt, int64(1), int64(2), int64(3), nil, nil, nil, nil}
}

func TestRowValues(t *testing.T) {
	s := newSpec(t, "dt", "region", "n")
	for _, tc := range []struct {
		row  fakeRow
		want []string
	}{
		{row("eu", int64(7), int64(0)), []string{"1970-01-01", "eu", "7"}},
		{row("eu", int64(-7), int64(-1)), []string{"1969-12-31", "eu", "-7"}},
		{row("us", int64(math.MinInt64), int64(20790)), []string{"2026-12-03", "us", "-9223372036854775808"}},
		{row("Köln", int64(math.MaxInt64), int64(19782)), []string{"2024-02-29", "Köln", "9223372036854775807"}},
		{row("eu", int64(0), int64(-25508)), []string{"1900-03-01", "eu", "0"}},
		{row("eu", int64(0), int64(minDateDays)), []string{"0000-01-01", "eu", "0"}},
		{row("eu", int64(0), int64(maxDateDays)), []string{"9999-12-31", "eu", "0"}},
	} {
		got, err := s.RowValues(nil, tc.row)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("RowValues(%v) = %q, %v; want %q", tc.row, got, err, tc.want)
		}
	}
}

func TestRowValuesReusesDst(t *testing.T) {
	s := newSpec(t, "region")
	dst := make([]string, 3, 8)
	got, err := s.RowValues(dst, row("eu", int64(1), int64(1)))
	if err != nil || !slices.Equal(got, []string{"eu"}) || &got[0] != &dst[0] {
		t.Fatalf("RowValues(dst) = %q, %v; want [eu] in dst's array", got, err)
	}
}

func TestRowValuesRefuses(t *testing.T) {
	s := newSpec(t, "dt", "region", "n")
	for _, tc := range []struct {
		name string
		row  fakeRow
		want string
	}{
		{"null STRING", row(nil, int64(1), int64(1)), "partition column region is null"},
		{"null INT", row("eu", nil, int64(1)), "partition column n is null"},
		{"null DATE", row("eu", int64(1), nil), "partition column dt is null"},
		{"short row", fakeRow{"eu", int64(1)}, "partition column dt is null"},
		{"STRING that cannot name a partition", row("eu/us", int64(1), int64(1)), "holds one of / = ,"},
		{"empty STRING", row("", int64(1), int64(1)), "empty partition value of region"},
		{"DATE before 0000", row("eu", int64(1), int64(minDateDays-1)), "not a DATE of the years 0000 to 9999"},
		{"DATE after 9999", row("eu", int64(1), int64(maxDateDays+1)), "not a DATE of the years 0000 to 9999"},
		{"DATE days that overflow seconds", row("eu", int64(1), int64(math.MinInt64)), "not a DATE of the years 0000 to 9999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.RowValues(nil, tc.row)
			if err == nil {
				t.Fatalf("RowValues = %q, want an error", got)
			}
			wantInvalid(t, err, tc.want)
		})
	}
}

func TestRowValuesName(t *testing.T) {
	s := newSpec(t, "dt", "region", "n")
	rapid.Check(t, func(t *rapid.T) {
		r := row(genValue(t, partition.String, "region"),
			rapid.Int64().Draw(t, "n"),
			rapid.Int64Range(minDateDays, maxDateDays).Draw(t, "dt"))
		values, err := s.RowValues(nil, r)
		if err != nil {
			t.Fatalf("RowValues(%v): %v", r, err)
		}
		if parsed, err := s.Parse(s.Name(values)); err != nil || !slices.Equal(parsed, values) {
			t.Fatalf("Parse(Name(%q)) = %q, %v", values, parsed, err)
		}
	})
}

func TestCompare(t *testing.T) {
	num := partition.Key{Name: "n", Kind: partition.Int}
	str := partition.Key{Name: "region", Kind: partition.String}
	for _, tc := range []struct {
		key  partition.Key
		a, b string
		want int
	}{
		{num, "9", "10", -1},
		{num, "-10", "-9", -1},
		{num, "10", "10", 0},
		{num, "10", "9", 1},
		{str, "9", "10", 1},
		{str, "eu", "us", -1},
	} {
		if got := tc.key.Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("%s Compare(%q, %q) = %d, want %d", tc.key.Name, tc.a, tc.b, got, tc.want)
		}
	}
}

// FuzzParse checks that Parse refuses what it cannot read with ErrInvalid
// and that what it reads names itself.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"dt=2026-12-03/region=eu/id=+007/n=-1", "region=eu,dt=2026-12-03,n=1,id=2", "", "=", "dt=2026-02-30", "eu", "a=b=c"} {
		f.Add(seed)
	}
	specs := []partition.Spec{newSpec(f, "dt", "region", "id", "n"), newSpec(f, "region")}
	f.Fuzz(func(t *testing.T, name string) {
		for _, s := range specs {
			values, err := s.Parse(name)
			if err != nil {
				if !errors.Is(err, partition.ErrInvalid) {
					t.Fatalf("Parse(%q): %v, not ErrInvalid", name, err)
				}
				continue
			}
			if again, err := s.Parse(s.Name(values)); err != nil || !slices.Equal(again, values) {
				t.Fatalf("Parse(%q) = %q, whose name %q parses to %q, %v", name, values, s.Name(values), again, err)
			}
		}
	})
}
