package client

import (
	"fmt"
	"slices"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

// upsertRows checks the rows of one UpsertWriter before they are buffered.
type upsertRows struct {
	full record.Schema // the table's
	// upsert is what an upsert row validates under: full, or for a partial
	// update full with every column outside the targets nullable.
	upsert record.Schema
	// del is what a delete row validates under: every non-key column
	// nullable.
	del record.Schema
	// outside lists the columns a partial update must leave null.
	outside []int
	// targets are the wire's target columns, ascending, the key columns
	// included; nil for full rows.
	targets []int32
}

// newUpsertRows prepares the checks of a writer of rows of s (with a
// primary key) that updates the partial columns, or whole rows.
func newUpsertRows(s record.Schema, partial []string) (*upsertRows, error) {
	u := &upsertRows{full: s, upsert: s}
	isKey := make([]bool, len(s.Columns))
	for _, name := range s.PrimaryKey {
		i, _ := s.ColumnIndex(name)
		isKey[i] = true
	}
	u.del = relaxed(s, func(i int) bool { return !isKey[i] })
	if len(partial) == 0 {
		return u, nil
	}
	target := slices.Clone(isKey)
	for _, name := range partial {
		i, ok := s.ColumnIndex(name)
		if !ok {
			return nil, pkgerr.Errorf("client", "%s: PartialColumns: %w", upsertWriterName,
				&record.ColumnError{Column: name, Err: record.ErrUnknownColumn})
		}
		target[i] = true
	}
	if !slices.Contains(target, false) {
		return u, nil // every column: whole rows
	}
	for i, t := range target {
		if t {
			u.targets = append(u.targets, int32(i))
		} else {
			u.outside = append(u.outside, i)
		}
	}
	u.upsert = relaxed(s, func(i int) bool { return !target[i] })
	return u, nil
}

// relaxed returns a copy of s whose columns i with loosen(i) are nullable.
func relaxed(s record.Schema, loosen func(i int) bool) record.Schema {
	out := record.Schema{Columns: slices.Clone(s.Columns), PrimaryKey: slices.Clone(s.PrimaryKey)}
	for i := range out.Columns {
		if loosen(i) {
			out.Columns[i].Nullable = true
		}
	}
	return out
}

// checkUpsert validates an upsert row.
func (u *upsertRows) checkUpsert(row []byte) error {
	if err := record.ValidateRow(u.upsert, row); err != nil {
		return err
	}
	return u.checkOutside(row)
}

// checkOutside refuses a partial update that sets a column outside its
// targets. The row must be valid.
func (u *upsertRows) checkOutside(row []byte) error {
	if len(u.outside) == 0 {
		return nil
	}
	v := record.NewRowView(u.upsert, row)
	for _, i := range u.outside {
		if !v.IsNull(i) {
			return fmt.Errorf("%w: column %q is set but is not one of the columns the update writes", ErrNotTargetColumn, u.full.Columns[i].Name)
		}
	}
	return nil
}

// checkDelete validates a delete row: its key columns set.
func (u *upsertRows) checkDelete(row []byte) error {
	return record.ValidateRow(u.del, row)
}
