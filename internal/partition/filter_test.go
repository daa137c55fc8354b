package partition_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/floedb/floe/internal/partition"
)

// Values the filter tests draw from, few so that conditions often meet
// them: integers across 9 and 10 (text order is not number order there).
var (
	filterStrings = []string{"a", "b", "eu", "eu-1", "us", "Z", "ä", "a<b"}
	filterInts    = []int64{-12, -10, -9, -1, 0, 1, 2, 9, 10, 11, 100}
	filterDates   = []string{"0999-01-01", "2026-11-30", "2026-12-01", "2026-12-03", "2027-01-01"}
	filterOps     = []string{"=", "!=", "<", "<=", ">", ">="}
)

func genFilterValue(t *rapid.T, k partition.Kind, label string) string {
	switch k {
	case partition.Int:
		return strconv.FormatInt(rapid.SampledFrom(filterInts).Draw(t, label), 10)
	case partition.Date:
		return rapid.SampledFrom(filterDates).Draw(t, label)
	}
	return rapid.SampledFrom(filterStrings).Draw(t, label)
}

// modelCondition is a filter condition as the test reads it.
type modelCondition struct {
	key   int
	op    string
	value string
}

// holds is the filter rule, written plainly: integers compare as numbers,
// dates and strings as text.
func (c modelCondition) holds(s partition.Spec, values []string) bool {
	var cmp int
	if s.Keys[c.key].Kind == partition.Int {
		a, _ := strconv.ParseInt(values[c.key], 10, 64)
		b, _ := strconv.ParseInt(c.value, 10, 64)
		cmp = compareInts(a, b)
	} else {
		cmp = strings.Compare(values[c.key], c.value)
	}
	switch c.op {
	case "=":
		return cmp == 0
	case "!=":
		return cmp != 0
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	}
	return cmp >= 0
}

func compareInts(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func modelMatch(s partition.Spec, terms [][]modelCondition, values []string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, term := range terms {
		all := true
		for _, c := range term {
			all = all && c.holds(s, values)
		}
		if all {
			return true
		}
	}
	return false
}

// genTerm draws a filter term of s: conditions joined by "/" or ",", each
// written with or without spaces, or a bare value where s has one key.
func genTerm(t *rapid.T, s partition.Spec) (string, []modelCondition) {
	if len(s.Keys) == 1 && rapid.Bool().Draw(t, "bare value") {
		k := s.Keys[0]
		v := genFilterValue(t, k.Kind, "value")
		if !strings.ContainsAny(v, "=<>!") { // else it reads as a condition
			return genSpelling(t, k.Kind, v, "spelling"), []modelCondition{{key: 0, op: "=", value: v}}
		}
	}
	var text strings.Builder
	var term []modelCondition
	space := rapid.SampledFrom([]string{"", " "})
	for i := range rapid.IntRange(1, 3).Draw(t, "conditions") {
		if i > 0 {
			text.WriteString(rapid.SampledFrom([]string{"/", ","}).Draw(t, "separator"))
		}
		c := modelCondition{key: rapid.IntRange(0, len(s.Keys)-1).Draw(t, "key"), op: rapid.SampledFrom(filterOps).Draw(t, "op")}
		k := s.Keys[c.key]
		c.value = genFilterValue(t, k.Kind, "value")
		text.WriteString(space.Draw(t, "space") + k.Name + space.Draw(t, "space") + c.op + space.Draw(t, "space"))
		text.WriteString(genSpelling(t, k.Kind, c.value, "spelling"))
		term = append(term, c)
	}
	return text.String(), term
}

func TestFilterMatchesModel(t *testing.T) {
	specs := []partition.Spec{newSpec(t, "region", "n", "dt"), newSpec(t, "n"), newSpec(t, "region"), newSpec(t, "dt")}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.SampledFrom(specs).Draw(t, "spec")
		var terms [][]modelCondition
		var texts []string
		for range rapid.IntRange(0, 3).Draw(t, "terms") {
			text, term := genTerm(t, s)
			texts, terms = append(texts, text), append(terms, term)
		}
		f, err := s.ParseFilter(texts)
		if err != nil {
			t.Fatalf("ParseFilter(%q): %v", texts, err)
		}
		if f.All() != (len(terms) == 0) {
			t.Fatalf("ParseFilter(%q).All() = %v", texts, f.All())
		}
		for range 8 {
			values := make([]string, len(s.Keys))
			for i, k := range s.Keys {
				values[i] = genFilterValue(t, k.Kind, "partition "+k.Name)
			}
			if got, want := f.Match(s, values), modelMatch(s, terms, values); got != want {
				t.Fatalf("filter %q on %s: Match = %v, want %v", texts, s.Name(values), got, want)
			}
		}
	})
}

func TestFilterOperators(t *testing.T) {
	s := newSpec(t, "region", "n", "dt")
	for _, tc := range []struct {
		filter string
		match  []string // partition names the filter passes
		miss   []string // and those it does not
	}{
		{"n<=5", []string{"region=a/n=5/dt=2026-12-03", "region=a/n=4/dt=2026-12-03"}, []string{"region=a/n=6/dt=2026-12-03"}},
		{"n<5", []string{"region=a/n=4/dt=2026-12-03"}, []string{"region=a/n=5/dt=2026-12-03"}},
		{"n>=5", []string{"region=a/n=5/dt=2026-12-03", "region=a/n=6/dt=2026-12-03"}, []string{"region=a/n=4/dt=2026-12-03"}},
		{"n>5", []string{"region=a/n=6/dt=2026-12-03"}, []string{"region=a/n=5/dt=2026-12-03"}},
		{"n!=5", []string{"region=a/n=4/dt=2026-12-03"}, []string{"region=a/n=5/dt=2026-12-03"}},
		{"n=+05", []string{"region=a/n=5/dt=2026-12-03"}, []string{"region=a/n=50/dt=2026-12-03"}},
		{"n<10", []string{"region=a/n=9/dt=2026-12-03", "region=a/n=-10/dt=2026-12-03"}, []string{"region=a/n=10/dt=2026-12-03", "region=a/n=100/dt=2026-12-03"}},
		{"dt>=2026-12-01", []string{"region=a/n=1/dt=2026-12-01", "region=a/n=1/dt=2027-01-01"}, []string{"region=a/n=1/dt=2026-11-30"}},
		{"region<b", []string{"region=a/n=1/dt=2026-12-03", "region=a<b/n=1/dt=2026-12-03"}, []string{"region=b/n=1/dt=2026-12-03", "region=ä/n=1/dt=2026-12-03"}},
		{"region=eu/dt>=2026-12-01", []string{"region=eu/n=1/dt=2026-12-03"}, []string{"region=us/n=1/dt=2026-12-03", "region=eu/n=1/dt=2026-11-30"}},
		{" region = eu , n > 1 ", []string{"region=eu/n=2/dt=2026-12-03"}, []string{"region=eu/n=1/dt=2026-12-03"}},
		{"region=a<b", []string{"region=a<b/n=1/dt=2026-12-03"}, []string{"region=a/n=1/dt=2026-12-03"}},
	} {
		f, err := s.ParseFilter([]string{tc.filter})
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", tc.filter, err)
			continue
		}
		matches := func(name string) bool {
			values, err := s.Parse(name)
			if err != nil {
				t.Fatal(err)
			}
			return f.Match(s, values)
		}
		for _, name := range tc.match {
			if !matches(name) {
				t.Errorf("filter %q does not pass %s", tc.filter, name)
			}
		}
		for _, name := range tc.miss {
			if matches(name) {
				t.Errorf("filter %q passes %s", tc.filter, name)
			}
		}
	}
}

func TestFilterTermsAreAlternatives(t *testing.T) {
	s := newSpec(t, "region", "n")
	f, err := s.ParseFilter([]string{"region=eu/n=1", "region=us"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{[]string{"eu", "1"}, true},
		{[]string{"eu", "2"}, false},
		{[]string{"us", "2"}, true},
		{[]string{"asia", "1"}, false},
	} {
		if got := f.Match(s, tc.values); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}

func TestFilterBareValue(t *testing.T) {
	s := newSpec(t, "n")
	f, err := s.ParseFilter([]string{"+010", "-3"})
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"10": true, "-3": true, "3": false, "1": false} {
		if got := f.Match(s, []string{v}); got != want {
			t.Errorf("filter 10 or -3 on n=%s: Match = %v, want %v", v, got, want)
		}
	}
}

func TestParseFilterRefuses(t *testing.T) {
	three := newSpec(t, "region", "n", "dt")
	for _, tc := range []struct {
		name  string
		spec  partition.Spec
		terms []string
		want  string
	}{
		{"not partitioned", partition.Spec{}, []string{"dt=2026-12-03"}, "the table is not partitioned: no partition filter applies"},
		{"unknown key", three, []string{"day>=2026-12-01"}, `"day" is not a partition column (region, n, dt)`},
		{"no key", three, []string{"=eu"}, "want key OP value"},
		{"no operator", three, []string{"region~eu"}, `"region~eu": want key OP value`},
		{"bare value of three keys", three, []string{"eu"}, `"eu": want key OP value`},
		{"empty term", three, []string{"/,"}, `empty partition filter "/,"`},
		{"empty term of three keys", three, []string{""}, `empty partition filter ""`},
		{"empty bare value", newSpec(t, "region"), []string{""}, "empty partition value of region"},
		{"bad integer", three, []string{"n<ten"}, `"ten" of n is not an integer`},
		{"bad date", three, []string{"dt>=2026-02-30"}, "is not a date"},
		{"bad string", three, []string{"region=a=b"}, "holds one of / = ,"},
		{"one bad term of two", three, []string{"region=eu", "n=x"}, "is not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.spec.ParseFilter(tc.terms)
			if err == nil {
				t.Fatalf("ParseFilter(%q) = %+v, want an error", tc.terms, f)
			}
			wantInvalid(t, err, tc.want)
		})
	}
}

func TestZeroFilterMatchesAll(t *testing.T) {
	s := newSpec(t, "region", "n")
	for _, tc := range []struct {
		name string
		f    func() (partition.Filter, error)
	}{
		{"zero Filter", func() (partition.Filter, error) { return partition.Filter{}, nil }},
		{"no terms", func() (partition.Filter, error) { return s.ParseFilter(nil) }},
		{"no terms, not partitioned", func() (partition.Filter, error) { return partition.Spec{}.ParseFilter(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.f()
			if err != nil {
				t.Fatal(err)
			}
			if !f.All() {
				t.Fatal("All() = false")
			}
			for _, values := range [][]string{{"eu", "1"}, {"us", "-5"}, nil} {
				if !f.Match(s, values) {
					t.Fatalf("Match(%q) = false", values)
				}
			}
		})
	}
}

// FuzzParseFilter checks that ParseFilter refuses what it cannot read
// with ErrInvalid, and never panics, nor does Match on what it reads.
func FuzzParseFilter(f *testing.F) {
	for _, seed := range []string{"region=eu/dt>=2026-12-01", "n<=+05,n!=3", "<=", "n<", "=", "2026-12-03", "region=a<b"} {
		f.Add(seed)
	}
	specs := []partition.Spec{newSpec(f, "region", "n", "dt"), newSpec(f, "dt")}
	f.Fuzz(func(t *testing.T, term string) {
		for _, s := range specs {
			filter, err := s.ParseFilter([]string{term})
			if err != nil {
				if !errors.Is(err, partition.ErrInvalid) {
					t.Fatalf("ParseFilter(%q): %v, not ErrInvalid", term, err)
				}
				continue
			}
			if filter.All() {
				t.Fatalf("ParseFilter(%q) passes every partition", term)
			}
			values := make([]string, len(s.Keys))
			for i, k := range s.Keys {
				values[i], _ = k.Canonical(map[partition.Kind]string{partition.String: "eu", partition.Int: "1", partition.Date: "2026-12-03"}[k.Kind])
			}
			filter.Match(s, values)
		}
	})
}
