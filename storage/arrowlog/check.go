package arrowlog

import "github.com/floedb/floe/storage/record"

// RowChecker checks, before a row is buffered for a batch, what the row
// format takes and an Arrow payload cannot hold: a TIMESTAMP or
// TIMESTAMP_LTZ of precision 7 to 9 outside the int64 nanoseconds Arrow
// stores it in, at any depth. A writer checks each row as it is appended,
// so that one bad row is refused alone instead of failing its batch when
// the batch is encoded.
//
// It walks a row as the Encoder's column checks do (checkValue), but keeps
// no state: a writer's Append runs on any number of goroutines at once,
// where an Encoder's checks count the bytes of the one batch they build.
type RowChecker struct {
	schema record.Schema
}

// NewRowChecker returns the checker of rows of s, or nil when every valid
// row of s fits an Arrow payload (no column needs a check).
func NewRowChecker(s record.Schema) *RowChecker {
	for _, c := range s.Columns {
		if timestampsToCheck(c.Type) {
			return &RowChecker{schema: s}
		}
	}
	return nil
}

// timestampsToCheck reports whether values of t can lie outside what Arrow holds.
func timestampsToCheck(t record.DataType) bool {
	switch t.Kind() {
	case record.KindTimestamp, record.KindTimestampLTZ:
		return t.Precision() > record.MaxCompactTimestampPrecision
	case record.KindArray:
		return timestampsToCheck(t.Elem().Type)
	case record.KindMap:
		return timestampsToCheck(t.MapKey().Type) || timestampsToCheck(t.MapValue().Type)
	case record.KindRow:
		for _, f := range t.Fields() {
			if timestampsToCheck(f.Type) {
				return true
			}
		}
	}
	return false
}

// Check returns a *TimestampRangeError for a value of row (a valid row of
// the checker's schema) that an Arrow payload cannot hold. A nil checker
// takes every row.
func (c *RowChecker) Check(row []byte) error {
	if c == nil {
		return nil
	}
	v := record.NewRowView(c.schema, row)
	for i, col := range c.schema.Columns {
		if !v.IsNull(i) {
			if err := checkArrowValue(col.Name, col.Type, rowValue{v, i}); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrowValue is one non-null value of a row or an array, read by its container.
type arrowValue interface {
	timestamp() (int64, int32)
	array() record.ArrayView
	mapValue() record.MapView
	row() record.RowView
}

type rowValue struct {
	v record.RowView
	i int
}

func (r rowValue) timestamp() (int64, int32) { return r.v.Timestamp(r.i) }
func (r rowValue) array() record.ArrayView   { return r.v.Array(r.i) }
func (r rowValue) mapValue() record.MapView  { return r.v.Map(r.i) }
func (r rowValue) row() record.RowView       { return r.v.Row(r.i) }

type elemValue struct {
	a record.ArrayView
	j int
}

func (e elemValue) timestamp() (int64, int32) { return e.a.Timestamp(e.j) }
func (e elemValue) array() record.ArrayView   { return e.a.Array(e.j) }
func (e elemValue) mapValue() record.MapView  { return e.a.Map(e.j) }
func (e elemValue) row() record.RowView       { return e.a.Row(e.j) }

// checkArrowValue checks the non-null value v of type t, named name in errors.
func checkArrowValue(name string, t record.DataType, v arrowValue) error {
	if !timestampsToCheck(t) {
		return nil
	}
	switch t.Kind() {
	case record.KindTimestamp, record.KindTimestampLTZ:
		if millis, nanos := v.timestamp(); !fitsNanos(millis, nanos) {
			return &TimestampRangeError{Column: name, Millis: millis, NanosOfMilli: nanos}
		}
	case record.KindArray:
		return checkArrowArray(name, t.Elem().Type, v.array())
	case record.KindMap:
		m := v.mapValue()
		if err := checkArrowArray(name, t.MapKey().Type, m.Keys()); err != nil {
			return err
		}
		return checkArrowArray(name, t.MapValue().Type, m.Values())
	case record.KindRow:
		r := v.row()
		for i, f := range t.Fields() {
			if !r.IsNull(i) {
				if err := checkArrowValue(name+"."+f.Name, f.Type, rowValue{r, i}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkArrowArray(name string, elem record.DataType, a record.ArrayView) error {
	for j := range a.Len() {
		if !a.IsNull(j) {
			if err := checkArrowValue(name, elem, elemValue{a, j}); err != nil {
				return err
			}
		}
	}
	return nil
}
