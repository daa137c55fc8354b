package partition

import (
	"strings"
)

// Filter selects partitions by their values: a partition passes when it
// meets every condition of any one of the filter's terms. The zero Filter
// passes every partition.
type Filter struct {
	terms [][]condition
}

type condition struct {
	key   int // index into the spec's keys
	op    string
	value string // canonical
}

// ops, longest first so "<=" is not read as "<".
var ops = []string{">=", "<=", "!=", ">", "<", "="}

// ParseFilter reads the terms a reader gave (floe consume --partition):
// each term is conditions joined by "/" or ",", each condition key OP value
// with OP one of = != > >= < <=, such as "dt=2026-12-03" or
// "region=eu/dt>=2026-12-01"; a bare value is "=" on a table with one
// partition column. No terms: every partition.
func (s Spec) ParseFilter(terms []string) (Filter, error) {
	var f Filter
	for _, term := range terms {
		if !s.Partitioned() {
			return Filter{}, invalidf("the table is not partitioned: no partition filter applies")
		}
		var conds []condition
		if len(s.Keys) == 1 && !strings.ContainsAny(term, "=<>!") {
			v, err := s.Keys[0].Canonical(term)
			if err != nil {
				return Filter{}, err
			}
			f.terms = append(f.terms, []condition{{key: 0, op: "=", value: v}})
			continue
		}
		for part := range strings.FieldsFuncSeq(term, func(r rune) bool { return r == '/' || r == ',' }) {
			c, err := s.parseCondition(part)
			if err != nil {
				return Filter{}, err
			}
			conds = append(conds, c)
		}
		if len(conds) == 0 {
			return Filter{}, invalidf("empty partition filter %q", term)
		}
		f.terms = append(f.terms, conds)
	}
	return f, nil
}

func (s Spec) parseCondition(part string) (condition, error) {
	at, op := -1, ""
	for _, o := range ops {
		if i := strings.Index(part, o); i >= 0 && (at < 0 || i < at) {
			at, op = i, o
		}
	}
	if at <= 0 {
		return condition{}, invalidf("partition filter %.64q: want key OP value, OP one of = != > >= < <=", part)
	}
	// At the first operator, the longest one there.
	for _, o := range ops {
		if strings.HasPrefix(part[at:], o) {
			op = o
			break
		}
	}
	name := strings.TrimSpace(part[:at])
	key := -1
	for i, k := range s.Keys {
		if k.Name == name {
			key = i
		}
	}
	if key < 0 {
		return condition{}, invalidf("partition filter %.64q: %.64q is not a partition column (%s)", part, name, strings.Join(s.Names(), ", "))
	}
	v, err := s.Keys[key].Canonical(strings.TrimSpace(part[at+len(op):]))
	if err != nil {
		return condition{}, err
	}
	return condition{key: key, op: op, value: v}, nil
}

// All reports whether the filter passes every partition.
func (f Filter) All() bool { return len(f.terms) == 0 }

// Match reports whether a partition of the spec, with these canonical
// values, passes.
func (f Filter) Match(s Spec, values []string) bool {
	if len(f.terms) == 0 {
		return true
	}
	for _, term := range f.terms {
		ok := true
		for _, c := range term {
			if c.key >= len(values) || !c.holds(s.Keys[c.key].Compare(values[c.key], c.value)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (c condition) holds(cmp int) bool {
	switch c.op {
	case "=":
		return cmp == 0
	case "!=":
		return cmp != 0
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	case "<":
		return cmp < 0
	default:
		return cmp <= 0
	}
}
