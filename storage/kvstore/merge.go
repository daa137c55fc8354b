package kvstore

import (
	"fmt"

	"github.com/floedb/floe/storage/record"
)

// engineKind is the family of a MergeEngine.
type engineKind uint8

const (
	engineLastRow engineKind = iota
	engineFirstRow
	engineVersioned
)

// MergeEngine decides what an upsert does to the row already stored under
// its key. The zero value is LastRow.
type MergeEngine struct {
	kind          engineKind
	versionColumn string
}

// LastRow is the default engine: an upsert replaces the stored row.
func LastRow() MergeEngine { return MergeEngine{kind: engineLastRow} }

// FirstRow keeps the first row of every key: upserts of a stored key are
// ignored.
func FirstRow() MergeEngine { return MergeEngine{kind: engineFirstRow} }

// Versioned keeps the row with the highest value of versionColumn, a NOT
// NULL TINYINT, SMALLINT, INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ column: an
// upsert whose version is not greater than the stored one is ignored.
func Versioned(versionColumn string) MergeEngine {
	return MergeEngine{kind: engineVersioned, versionColumn: versionColumn}
}

// String returns the table property value: last_row, first_row or
// versioned(<column>).
func (e MergeEngine) String() string {
	switch e.kind {
	case engineFirstRow:
		return "first_row"
	case engineVersioned:
		return "versioned(" + e.versionColumn + ")"
	default:
		return "last_row"
	}
}

// DeleteBehavior is what a delete does (table property delete.behavior).
type DeleteBehavior uint8

const (
	// DeleteAllow removes the row and emits -D; the default.
	DeleteAllow DeleteBehavior = iota
	// DeleteIgnore drops deletes silently.
	DeleteIgnore
	// DeleteDisable refuses deletes with ErrDeleteDisabled.
	DeleteDisable
)

// MergeOptions are the table properties Merge follows besides the engine.
// The zero value is the default.
type MergeOptions struct {
	// NoUpdateBefore drops the -U record of updates, leaving +U alone
	// (changelog.image=wal): consumers then need the KV store, not the
	// changelog, to know the old row.
	NoUpdateBefore bool
	// DeleteBehavior says what deletes do.
	DeleteBehavior DeleteBehavior
}

// Update is one write to a primary-key table.
type Update struct {
	// Row is the new row under the table schema. For a delete it only
	// needs to carry the key and is not read by Merge.
	Row []byte
	// Delete removes the key instead of writing Row. A delete removes the
	// whole row; PartialColumns is ignored.
	Delete bool
	// PartialColumns lists the 0-based column indexes the update sets;
	// nil means every column. The key columns are always taken from Row
	// and must not be null there; the other columns keep their stored
	// values, or are null for a new key. In Row, columns outside the list
	// may be null even when NOT NULL. Only LastRow takes partial updates.
	PartialColumns []int
}

// Record is one changelog record produced by Merge.
type Record struct {
	Kind record.ChangeType
	Row  []byte
}

// Merge applies update u to old, the row stored under u's key (nil if
// none), under schema s (which has a primary key) and engine e. It returns
// the changelog records to emit, in order, and the row stored afterwards
// (old itself when nothing changes, nil when the key is absent):
//
//   - a new key: +I new;
//   - an update: -U old, +U new (only +U with opts.NoUpdateBefore);
//   - a delete of a stored key: -D old;
//   - nothing when FirstRow sees a stored key, when Versioned sees a
//     version not greater than the stored one, for a delete of an absent
//     key, or for any delete under DeleteIgnore.
//
// Merge is pure: it reads s, old and u and keeps none of them. Returned
// rows may alias old and u.Row. Errors match ErrInvalidUpdate or
// ErrDeleteDisabled; a missing NOT NULL column of a partial insert also
// matches record.ErrNullNotAllowed.
func Merge(s record.Schema, e MergeEngine, old []byte, u Update, opts MergeOptions) (changes []Record, newRow []byte, err error) {
	if len(s.PrimaryKey) == 0 {
		return nil, nil, fmt.Errorf("%w: schema has no primary key", ErrInvalidUpdate)
	}
	if u.Delete {
		return mergeDelete(old, opts)
	}
	row := u.Row
	if u.PartialColumns != nil {
		if e.kind != engineLastRow {
			return nil, nil, fmt.Errorf("%w: partial update under merge engine %s", ErrInvalidUpdate, e)
		}
		row, err = mergePartial(s, old, u)
		if err != nil {
			return nil, nil, err
		}
	} else if err := record.ValidateRow(s, row); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidUpdate, err)
	}
	var versionIndex int
	if e.kind == engineVersioned {
		if versionIndex, err = checkVersion(s, e.versionColumn, row); err != nil {
			return nil, nil, err
		}
	}
	if old == nil {
		return []Record{{Kind: record.Insert, Row: row}}, row, nil
	}
	switch e.kind {
	case engineFirstRow:
		return nil, old, nil
	case engineVersioned:
		if !versionGreater(s, versionIndex, row, old) {
			return nil, old, nil
		}
	}
	if opts.NoUpdateBefore {
		return []Record{{Kind: record.UpdateAfter, Row: row}}, row, nil
	}
	return []Record{{Kind: record.UpdateBefore, Row: old}, {Kind: record.UpdateAfter, Row: row}}, row, nil
}

func mergeDelete(old []byte, opts MergeOptions) ([]Record, []byte, error) {
	switch opts.DeleteBehavior {
	case DeleteIgnore:
		return nil, old, nil
	case DeleteDisable:
		return nil, old, ErrDeleteDisabled
	}
	if old == nil {
		return nil, nil, nil
	}
	return []Record{{Kind: record.Delete, Row: old}}, nil, nil
}

// mergePartial builds the row of a partial update: key and listed columns
// from u.Row, the others from old (null when old is nil).
func mergePartial(s record.Schema, old []byte, u Update) ([]byte, error) {
	n := len(s.Columns)
	fromUpdate := make([]bool, n)
	for _, i := range u.PartialColumns {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("%w: partial column index %d out of range [0, %d)", ErrInvalidUpdate, i, n)
		}
		fromUpdate[i] = true
	}
	// The update row may leave NOT NULL columns outside the list null:
	// validate it under a schema where only the key columns are NOT NULL.
	relaxed := record.Schema{Columns: make([]record.Column, n)}
	for i, c := range s.Columns {
		c.Nullable = true
		relaxed.Columns[i] = c
	}
	for _, name := range s.PrimaryKey {
		i, ok := s.ColumnIndex(name)
		if !ok {
			return nil, fmt.Errorf("%w: unknown primary key column %q", ErrInvalidUpdate, name)
		}
		relaxed.Columns[i].Nullable = false
		fromUpdate[i] = true
	}
	if err := record.ValidateRow(relaxed, u.Row); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidUpdate, err)
	}
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidUpdate, err)
	}
	updateView := record.NewRowView(s, u.Row)
	var oldView record.RowView
	if old != nil {
		oldView = record.NewRowView(s, old)
	}
	for i, c := range s.Columns {
		switch {
		case fromUpdate[i]:
			copyField(enc, updateView, c, i)
		case old != nil:
			copyField(enc, oldView, c, i)
		}
	}
	row, err := enc.Finish(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: partial update: %w", ErrInvalidUpdate, err)
	}
	return row, nil
}

// checkVersion returns the index of the version column, checking its type
// and that row has a value there.
func checkVersion(s record.Schema, name string, row []byte) (int, error) {
	i, ok := s.ColumnIndex(name)
	if !ok {
		return 0, fmt.Errorf("%w: unknown version column %q", ErrInvalidUpdate, name)
	}
	switch s.Columns[i].Type.Kind() {
	case record.KindTinyInt, record.KindSmallInt, record.KindInt, record.KindBigInt,
		record.KindTimestamp, record.KindTimestampLTZ:
	default:
		return 0, fmt.Errorf("%w: version column %q has type %s", ErrInvalidUpdate, name, s.Columns[i].Type)
	}
	if record.NewRowView(s, row).IsNull(i) {
		return 0, fmt.Errorf("%w: null in version column %q", ErrInvalidUpdate, name)
	}
	return i, nil
}

// versionGreater reports whether the version of row is greater than that
// of old. A stored row with a null version is always replaced.
func versionGreater(s record.Schema, i int, row, old []byte) bool {
	nv, ov := record.NewRowView(s, row), record.NewRowView(s, old)
	if ov.IsNull(i) {
		return true
	}
	switch s.Columns[i].Type.Kind() {
	case record.KindTimestamp, record.KindTimestampLTZ:
		nm, nn := nv.Timestamp(i)
		om, on := ov.Timestamp(i)
		return nm > om || (nm == om && nn > on)
	default:
		return nv.Int64(i) > ov.Int64(i)
	}
}
