// Package partition is the partitioning of a partitioned table: which
// columns partition it, the canonical text of a partition's values, its
// name ("dt=2026-12-03", "region=eu/dt=2026-12-03"), the partition of a
// row, filters that prune partitions before any bucket is asked, and the
// time units of auto-partitioning. The metadata state, the tablet nodes,
// the SDK and the CLI all use it, so a value means the same everywhere
// (docs/partitions.md).
package partition

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/floedb/floe/internal/pkgerr"
)

// Limits of partitioning.
const (
	// MaxKeys is the most partition columns a table has.
	MaxKeys = 4
	// MaxValueBytes is the longest partition value, in canonical text.
	MaxValueBytes = 128
)

// The DATE range, as storage/record has it: 0000-01-01 to 9999-12-31 in
// days since 1970-01-01. A day outside it would have a name Parse refuses
// (and overflow the seconds dayOf computes).
const (
	minDateDays = -719_528
	maxDateDays = 2_932_896
)

// ErrInvalid is the error of a partition spec, value, name or filter that
// breaks the rules; the message names the rule.
var ErrInvalid = pkgerr.New("partition", "invalid partition")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Kind is the family of a partition column's values.
type Kind int

// Partition column kinds.
const (
	// String values are the column's text.
	String Kind = iota + 1
	// Int values are decimal integers, compared as numbers.
	Int
	// Date values are "YYYY-MM-DD".
	Date
)

// Key is one partition column.
type Key struct {
	Name   string
	Column int // its index in the table's columns
	Kind   Kind
}

// Spec is a table's partitioning: its partition columns in order. The
// zero Spec partitions nothing.
type Spec struct {
	Keys []Key
}

// Partitioned reports whether the spec partitions anything.
func (s Spec) Partitioned() bool { return len(s.Keys) > 0 }

// Column is a table column as the catalog has it: its name, canonical SQL
// type (record.DataType's String: "STRING", "BIGINT", "DATE", ...) and
// nullability. (The metadata state does not import the storage packages.)
type Column struct {
	Name     string
	Type     string
	Nullable bool
}

// kindOfType is the partition kind of a canonical type name.
func kindOfType(typ string) (Kind, bool) {
	switch strings.ToUpper(typ) {
	case "STRING":
		return String, true
	case "TINYINT", "SMALLINT", "INT", "BIGINT":
		return Int, true
	case "DATE":
		return Date, true
	}
	return 0, false
}

// NewSpec resolves partition column names against a table's columns.
// Partition columns are NOT NULL columns of STRING, an integer type or
// DATE, at most MaxKeys, each once; of a primary-key table, columns of the
// primary key (so a key names its partition).
func NewSpec(columns []Column, primaryKey, keys []string) (Spec, error) {
	if len(keys) > MaxKeys {
		return Spec{}, invalidf("%d partition columns, at most %d", len(keys), MaxKeys)
	}
	var s Spec
	for _, name := range keys {
		i := slices.IndexFunc(columns, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return Spec{}, invalidf("partition column %.64q is not a column of the table", name)
		}
		if slices.ContainsFunc(s.Keys, func(k Key) bool { return k.Name == name }) {
			return Spec{}, invalidf("partition column %q named twice", name)
		}
		col := columns[i]
		kind, ok := kindOfType(col.Type)
		if !ok {
			return Spec{}, invalidf("partition column %q is %.64s; partition columns are STRING, TINYINT, SMALLINT, INT, BIGINT or DATE", name, col.Type)
		}
		if col.Nullable {
			return Spec{}, invalidf("partition column %q is nullable; partition columns are NOT NULL", name)
		}
		if len(primaryKey) > 0 && !slices.Contains(primaryKey, name) {
			return Spec{}, invalidf("partition column %q is not in the primary key (%s): a primary-key table's partition columns are key columns, so a key names its partition", name, strings.Join(primaryKey, ", "))
		}
		s.Keys = append(s.Keys, Key{Name: name, Column: i, Kind: kind})
	}
	return s, nil
}

// Names returns the partition column names.
func (s Spec) Names() []string {
	out := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		out[i] = k.Name
	}
	return out
}

// Canonical checks one value of key k and returns its canonical text:
// integers without sign clutter or leading zeros, dates as YYYY-MM-DD,
// strings as they are (non-empty, at most MaxValueBytes, valid UTF-8, no
// control characters, none of / = , which names and filters use, and no
// white space at either end: Parse and ParseFilter trim it around "=", so
// such a value could be named but never selected). Integers and dates drop
// white space around them.
func (k Key) Canonical(v string) (string, error) {
	switch k.Kind {
	case Int:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", invalidf("partition value %.64q of %s is not an integer", v, k.Name)
		}
		return strconv.FormatInt(n, 10), nil
	case Date:
		t, err := time.Parse(time.DateOnly, strings.TrimSpace(v))
		if err != nil {
			return "", invalidf("partition value %.64q of %s is not a date (YYYY-MM-DD)", v, k.Name)
		}
		return t.Format(time.DateOnly), nil
	}
	switch {
	case v == "":
		return "", invalidf("empty partition value of %s", k.Name)
	case len(v) > MaxValueBytes:
		return "", invalidf("partition value of %s is %d bytes, more than %d", k.Name, len(v), MaxValueBytes)
	case !utf8.ValidString(v):
		return "", invalidf("partition value of %s is not valid UTF-8", k.Name)
	case strings.ContainsAny(v, "/=,"):
		return "", invalidf("partition value %.64q of %s holds one of / = , (partition names and filters use them)", v, k.Name)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "", invalidf("partition value %.64q of %s holds a control character", v, k.Name)
	case strings.TrimSpace(v) != v:
		return "", invalidf("partition value %.64q of %s starts or ends with white space", v, k.Name)
	}
	return v, nil
}

// Check checks a partition's values, one per key, and returns them in
// canonical text.
func (s Spec) Check(values []string) ([]string, error) {
	if len(values) != len(s.Keys) {
		return nil, invalidf("%d partition values for %d partition columns (%s)", len(values), len(s.Keys), strings.Join(s.Names(), ", "))
	}
	out := make([]string, len(values))
	for i, k := range s.Keys {
		v, err := k.Canonical(values[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Name is the name of the partition of values (canonical, as Check
// returns them): key=value pairs in key order joined by "/".
func (s Spec) Name(values []string) string {
	var b strings.Builder
	for i, k := range s.Keys {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(k.Name)
		b.WriteByte('=')
		if i < len(values) {
			b.WriteString(values[i])
		}
	}
	return b.String()
}

// Parse reads a partition name ("dt=2026-12-03", the pairs in any order,
// separated by "/" or ",") into canonical values in key order. A table
// with one partition column also takes the bare value ("2026-12-03").
func (s Spec) Parse(name string) ([]string, error) {
	if !s.Partitioned() {
		return nil, invalidf("the table is not partitioned")
	}
	if len(s.Keys) == 1 && !strings.Contains(name, "=") {
		return s.Check([]string{name})
	}
	values := make([]string, len(s.Keys))
	set := make([]bool, len(s.Keys))
	for part := range strings.FieldsFuncSeq(name, func(r rune) bool { return r == '/' || r == ',' }) {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return nil, invalidf("%.64q in partition %.128q is not key=value", part, name)
		}
		i := slices.IndexFunc(s.Keys, func(k Key) bool { return k.Name == strings.TrimSpace(key) })
		if i < 0 {
			return nil, invalidf("%.64q is not a partition column (%s)", key, strings.Join(s.Names(), ", "))
		}
		if set[i] {
			return nil, invalidf("partition column %q given twice in %.128q", s.Keys[i].Name, name)
		}
		values[i], set[i] = strings.TrimSpace(value), true
	}
	for i, ok := range set {
		if !ok {
			return nil, invalidf("partition %.128q has no value for %s", name, s.Keys[i].Name)
		}
	}
	return s.Check(values)
}

// Row is what RowValues reads of a row: record.RowView.
type Row interface {
	NumColumns() int
	IsNull(i int) bool
	Int64(i int) int64
	String(i int) string
}

// RowValues returns the canonical values of a row's partition, appended to
// dst[:0]. The row is of the table's schema (the columns the spec was made
// from); DATE columns hold days since 1970-01-01.
func (s Spec) RowValues(dst []string, v Row) ([]string, error) {
	dst = dst[:0]
	for _, k := range s.Keys {
		if k.Column >= v.NumColumns() || v.IsNull(k.Column) {
			return nil, invalidf("partition column %s is null", k.Name)
		}
		var val string
		switch k.Kind {
		case Int:
			val = strconv.FormatInt(v.Int64(k.Column), 10)
		case Date:
			day, err := k.dayOf(v.Int64(k.Column))
			if err != nil {
				return nil, err
			}
			val = day.Format(time.DateOnly)
		default:
			var err error
			if val, err = k.Canonical(v.String(k.Column)); err != nil {
				return nil, err
			}
		}
		dst = append(dst, val)
	}
	return dst, nil
}

// dayOf returns the date of a DATE value of key k, days since 1970-01-01.
func (k Key) dayOf(days int64) (time.Time, error) {
	if days < minDateDays || days > maxDateDays {
		return time.Time{}, invalidf("partition column %s holds %d days since 1970-01-01, not a DATE of the years 0000 to 9999", k.Name, days)
	}
	return time.Unix(days*86400, 0).UTC(), nil
}

// Compare orders two canonical values of key k: integers as numbers,
// dates and strings as text (ISO dates and the time units' formats sort
// as text in time order).
func (k Key) Compare(a, b string) int {
	if k.Kind == Int {
		x, errA := strconv.ParseInt(a, 10, 64)
		y, errB := strconv.ParseInt(b, 10, 64)
		if errA == nil && errB == nil {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	return strings.Compare(a, b)
}
