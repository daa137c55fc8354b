package kvstore

import (
	"testing"

	"github.com/floedb/floe/storage/record"
)

// testSchema: id BIGINT NOT NULL (primary key), ver BIGINT NOT NULL,
// name STRING NOT NULL, note STRING, ts TIMESTAMP(3).
var testSchema = record.Schema{
	Columns: []record.Column{
		{Name: "id", Type: record.BigInt()},
		{Name: "ver", Type: record.BigInt()},
		{Name: "name", Type: record.String()},
		{Name: "note", Type: record.String(), Nullable: true},
		{Name: "ts", Type: record.Timestamp(3), Nullable: true},
	},
	PrimaryKey: []string{"id"},
}

const (
	colID = iota
	colVer
	colName
	colNote
	colTS
)

// relaxedSchema is testSchema with every non-key column nullable: the
// layout of partial-update rows.
func relaxedSchema() record.Schema {
	s := record.Schema{Columns: append([]record.Column(nil), testSchema.Columns...), PrimaryKey: testSchema.PrimaryKey}
	for i := 1; i < len(s.Columns); i++ {
		s.Columns[i].Nullable = true
	}
	return s
}

// fataler is what helpers need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// encodeRow encodes vals (column index → int64, string or [2]int64 for a
// timestamp millis/nanos) under s; absent columns are null.
func encodeRow(t fataler, s record.Schema, vals map[int]any) []byte {
	t.Helper()
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatalf("NewRowEncoder: %v", err)
	}
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			enc.SetInt64(i, v)
		case int:
			enc.SetInt64(i, int64(v))
		case string:
			enc.SetString(i, v)
		case [2]int64:
			enc.SetTimestamp(i, v[0], int32(v[1]))
		default:
			t.Fatalf("encodeRow: unsupported value %T", v)
		}
	}
	row, err := enc.Finish(nil)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return row
}

// fullRow is a complete testSchema row; note "" means null.
func fullRow(t fataler, id, ver int64, name, note string) []byte {
	t.Helper()
	vals := map[int]any{colID: id, colVer: ver, colName: name}
	if note != "" {
		vals[colNote] = note
	}
	return encodeRow(t, testSchema, vals)
}

func newTestStore(t *testing.T, dir string) *Store {
	t.Helper()
	return openTestStore(t, Config{Dir: dir})
}

// testStoreID is the store the single-store tests use.
var testStoreID = StoreID{Table: 1}

// openTestDB opens a DB with cfg, closed when the test ends.
func openTestDB(t testing.TB, cfg Config) *DB {
	t.Helper()
	db, err := OpenDB(cfg)
	if err != nil {
		t.Fatalf("OpenDB: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openTestStore opens a DB with cfg and its store testStoreID.
func openTestStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := openTestDB(t, cfg).Open(testStoreID)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}
