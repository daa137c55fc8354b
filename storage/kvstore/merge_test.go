package kvstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/floedb/floe/storage/record"
)

func TestMerge(t *testing.T) {
	old := fullRow(t, 1, 5, "alice", "hello")
	newer := fullRow(t, 1, 6, "bob", "")
	sameVer := fullRow(t, 1, 5, "carol", "")
	older := fullRow(t, 1, 4, "dave", "")
	partialName := encodeRow(t, relaxedSchema(), map[int]any{colID: int64(1), colName: "zed"})
	partialNote := encodeRow(t, relaxedSchema(), map[int]any{colID: int64(1), colNote: "new note"})
	// Partial insert setting every NOT NULL column.
	partialAll := encodeRow(t, relaxedSchema(), map[int]any{colID: int64(2), colVer: int64(1), colName: "new"})
	allNullable := relaxedSchema()
	allNullable.Columns[colID].Nullable = true
	allNullable.PrimaryKey = nil
	noKey := encodeRow(t, allNullable, map[int]any{colName: "zed"})

	type rec struct {
		kind record.ChangeType
		row  []byte
	}
	tests := []struct {
		name    string
		engine  MergeEngine
		opts    MergeOptions
		old     []byte
		update  Update
		want    []rec
		wantRow []byte
		wantErr []error
	}{
		{name: "insert", old: nil, update: Update{Row: newer},
			want: []rec{{record.Insert, newer}}, wantRow: newer},
		{name: "update", old: old, update: Update{Row: newer},
			want: []rec{{record.UpdateBefore, old}, {record.UpdateAfter, newer}}, wantRow: newer},
		{name: "update without update-before", opts: MergeOptions{NoUpdateBefore: true}, old: old, update: Update{Row: newer},
			want: []rec{{record.UpdateAfter, newer}}, wantRow: newer},
		{name: "insert without update-before", opts: MergeOptions{NoUpdateBefore: true}, update: Update{Row: newer},
			want: []rec{{record.Insert, newer}}, wantRow: newer},
		{name: "delete", old: old, update: Update{Row: newer, Delete: true},
			want: []rec{{record.Delete, old}}, wantRow: nil},
		{name: "delete missing key", old: nil, update: Update{Row: newer, Delete: true},
			want: nil, wantRow: nil},
		{name: "delete ignored", opts: MergeOptions{DeleteBehavior: DeleteIgnore}, old: old, update: Update{Delete: true},
			want: nil, wantRow: old},
		{name: "delete disabled", opts: MergeOptions{DeleteBehavior: DeleteDisable}, old: old, update: Update{Delete: true},
			wantErr: []error{ErrDeleteDisabled}},
		{name: "first_row insert", engine: FirstRow(), update: Update{Row: newer},
			want: []rec{{record.Insert, newer}}, wantRow: newer},
		{name: "first_row ignores update", engine: FirstRow(), old: old, update: Update{Row: newer},
			want: nil, wantRow: old},
		{name: "first_row delete", engine: FirstRow(), old: old, update: Update{Delete: true},
			want: []rec{{record.Delete, old}}, wantRow: nil},
		{name: "versioned insert", engine: Versioned("ver"), update: Update{Row: older},
			want: []rec{{record.Insert, older}}, wantRow: older},
		{name: "versioned newer", engine: Versioned("ver"), old: old, update: Update{Row: newer},
			want: []rec{{record.UpdateBefore, old}, {record.UpdateAfter, newer}}, wantRow: newer},
		{name: "versioned equal ignored", engine: Versioned("ver"), old: old, update: Update{Row: sameVer},
			want: nil, wantRow: old},
		{name: "versioned older ignored", engine: Versioned("ver"), old: old, update: Update{Row: older},
			want: nil, wantRow: old},
		{name: "versioned unknown column", engine: Versioned("nope"), old: old, update: Update{Row: newer},
			wantErr: []error{ErrInvalidUpdate}},
		{name: "versioned string column", engine: Versioned("name"), old: old, update: Update{Row: newer},
			wantErr: []error{ErrInvalidUpdate}},
		{name: "partial update keeps other columns", old: old,
			update:  Update{Row: partialName, PartialColumns: []int{colName}},
			want:    []rec{{record.UpdateBefore, old}, {record.UpdateAfter, fullRow(t, 1, 5, "zed", "hello")}},
			wantRow: fullRow(t, 1, 5, "zed", "hello")},
		{name: "partial update of a nullable column", old: old,
			update:  Update{Row: partialNote, PartialColumns: []int{colID, colNote}},
			want:    []rec{{record.UpdateBefore, old}, {record.UpdateAfter, fullRow(t, 1, 5, "alice", "new note")}},
			wantRow: fullRow(t, 1, 5, "alice", "new note")},
		{name: "partial update setting a column to null", old: old,
			update:  Update{Row: partialName, PartialColumns: []int{colName, colNote}},
			want:    []rec{{record.UpdateBefore, old}, {record.UpdateAfter, fullRow(t, 1, 5, "zed", "")}},
			wantRow: fullRow(t, 1, 5, "zed", "")},
		{name: "partial insert", update: Update{Row: partialAll, PartialColumns: []int{colVer, colName}},
			want:    []rec{{record.Insert, fullRow(t, 2, 1, "new", "")}},
			wantRow: fullRow(t, 2, 1, "new", "")},
		{name: "partial insert missing NOT NULL column", update: Update{Row: partialName, PartialColumns: []int{colName}},
			wantErr: []error{ErrInvalidUpdate, record.ErrNullNotAllowed}},
		{name: "partial update without key", old: old, update: Update{Row: noKey, PartialColumns: []int{colName}},
			wantErr: []error{ErrInvalidUpdate, record.ErrNullNotAllowed}},
		{name: "partial column out of range", old: old, update: Update{Row: partialName, PartialColumns: []int{9}},
			wantErr: []error{ErrInvalidUpdate}},
		{name: "partial under first_row", engine: FirstRow(), old: old, update: Update{Row: partialName, PartialColumns: []int{colName}},
			wantErr: []error{ErrInvalidUpdate}},
		{name: "full update with null NOT NULL column", old: old, update: Update{Row: partialName},
			wantErr: []error{ErrInvalidUpdate, record.ErrInvalidRow}},
		{name: "garbage row", old: old, update: Update{Row: []byte{1, 2, 3}},
			wantErr: []error{ErrInvalidUpdate, record.ErrInvalidRow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, newRow, err := Merge(testSchema, tt.engine, tt.old, tt.update, tt.opts)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Merge succeeded, want error %v", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !errors.Is(err, w) {
						t.Fatalf("Merge error %v does not match %v", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if len(changes) != len(tt.want) {
				t.Fatalf("Merge emitted %d records, want %d: %v", len(changes), len(tt.want), changes)
			}
			for i, c := range changes {
				if c.Kind != tt.want[i].kind || !bytes.Equal(c.Row, tt.want[i].row) {
					t.Errorf("record %d = %s %x, want %s %x", i, c.Kind, c.Row, tt.want[i].kind, tt.want[i].row)
				}
			}
			if !bytes.Equal(newRow, tt.wantRow) || (newRow == nil) != (tt.wantRow == nil) {
				t.Errorf("new row = %x, want %x", newRow, tt.wantRow)
			}
		})
	}
}

func TestMergeVersionedTimestamp(t *testing.T) {
	ts := func(millis int64, id int64) []byte {
		return encodeRow(t, testSchema, map[int]any{colID: id, colVer: int64(0), colName: "n", colTS: [2]int64{millis, 0}})
	}
	old := ts(1000, 1)
	tests := []struct {
		name    string
		row     []byte
		replace bool
	}{
		{"newer", ts(1001, 1), true},
		{"equal", ts(1000, 1), false},
		{"older", ts(999, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, _, err := Merge(testSchema, Versioned("ts"), old, Update{Row: tt.row}, MergeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if (len(changes) > 0) != tt.replace {
				t.Fatalf("changes = %v, want replace=%v", changes, tt.replace)
			}
		})
	}
	nullTS := fullRow(t, 1, 0, "n", "")
	if _, _, err := Merge(testSchema, Versioned("ts"), old, Update{Row: nullTS}, MergeOptions{}); !errors.Is(err, ErrInvalidUpdate) {
		t.Fatalf("null version: err = %v, want ErrInvalidUpdate", err)
	}
}

func TestMergeNoPrimaryKey(t *testing.T) {
	s := record.Schema{Columns: testSchema.Columns}
	if _, _, err := Merge(s, LastRow(), nil, Update{Row: fullRow(t, 1, 1, "a", "")}, MergeOptions{}); !errors.Is(err, ErrInvalidUpdate) {
		t.Fatalf("err = %v, want ErrInvalidUpdate", err)
	}
}

// TestMergePartialKeepsEveryType: a partial update keeps the stored value
// of every column it does not set, whatever its type, nested ones too.
func TestMergePartialKeepsEveryType(t *testing.T) {
	s, err := record.ParseSchema("id BIGINT NOT NULL, b BOOLEAN, i8 TINYINT, f FLOAT, d DOUBLE, dec DECIMAL(10,2), " +
		"big DECIMAL(30,4), s STRING, by BYTES, dt DATE, tm TIME, ts TIMESTAMP(3), tsn TIMESTAMP_LTZ(9), " +
		"arr ARRAY<STRING>, m MAP<STRING, INT>, r ROW<a INT, nested ARRAY<ROW<x STRING>>>, touched INT")
	if err != nil {
		t.Fatal(err)
	}
	s.PrimaryKey = []string{"id"}
	old, err := record.AppendRowFromJSON(nil, s, []byte(`{"id":1,"b":true,"i8":-3,"f":1.5,"d":2.25,"dec":"12.34",`+
		`"big":"123456789012345678901234.5678","s":"a string of some length","by":"AQID","dt":"2026-12-05","tm":"10:11:12.123",`+
		`"ts":"2026-12-05T10:11:12.123","tsn":"2026-12-05T10:11:12.123456789Z","arr":["x",null,"z"],"m":{"k":1},`+
		`"r":{"a":7,"nested":[{"x":"deep"}]},"touched":1}`))
	if err != nil {
		t.Fatal(err)
	}
	relaxed := record.Schema{PrimaryKey: s.PrimaryKey}
	for _, c := range s.Columns {
		c.Nullable = c.Name != "id"
		relaxed.Columns = append(relaxed.Columns, c)
	}
	update, err := record.AppendRowFromJSON(nil, relaxed, []byte(`{"id":1,"touched":2}`))
	if err != nil {
		t.Fatal(err)
	}
	touched, _ := s.ColumnIndex("touched")
	_, row, err := Merge(s, LastRow(), old, Update{Row: update, PartialColumns: []int{touched}}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(mustJSON(t, s, old), []byte(`"touched":1`), []byte(`"touched":2`), 1)
	if got := mustJSON(t, s, row); !bytes.Equal(got, want) {
		t.Fatalf("merged row\n %s\nwant\n %s", got, want)
	}
}

func mustJSON(t *testing.T, s record.Schema, row []byte) []byte {
	t.Helper()
	js, err := record.AppendRowJSON(nil, s, row)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
