package metastate

import (
	"fmt"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

func alterTable(c *pb.AlterTable) *pb.Command {
	if c.Checks == 0 {
		c.Checks = CreateTableChecks
	}
	return &pb.Command{Op: &pb.Command_AlterTable{AlterTable: c}}
}

// eventsTable is a log table of sales.events; edit sets fields.
func eventsTable(edit func(*pb.CreateTable)) *pb.Command {
	return createTable(ordersTable("sales", "events", func(c *pb.CreateTable) {
		c.PrimaryKey = nil
		c.Replication = 3
		if edit != nil {
			edit(c)
		}
	}))
}

func (h *harness) table(name string) *pb.TableRecord {
	h.t.Helper()
	t, _, err := h.s.Table("sales", name)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

func TestAlterTable(t *testing.T) {
	h := ddlFixture(t)
	h.ok(eventsTable(nil))
	before := h.table("events")

	// Properties, a column and the comment in one command.
	comment := "what the shop sold"
	res := h.ok(withID("alter-1", alterTable(&pb.AlterTable{Database: "sales", Name: "events",
		SetProperties: map[string]string{"log.ttl": "1h", "min.insync.replicas": "3", "log.format": "row"},
		AddColumns:    []*pb.Column{{Name: "channel", Type: "STRING", Nullable: true}},
		Comment:       &comment, TableId: before.GetId(), ExpectedSchemaId: 1})))
	after := h.table("events")
	if !proto.Equal(res.GetTable(), after) {
		t.Fatalf("result %v, stored %v", res.GetTable(), after)
	}
	if got := after.GetProperties(); got["log.ttl"] != "1h" || got["min.insync.replicas"] != "3" || got["log.format"] != "row" {
		t.Errorf("properties %v", got)
	}
	if n := len(after.GetSchemas()); n != 2 || after.GetSchemas()[1].GetId() != 2 || len(after.GetSchemas()[1].GetColumns()) != 5 {
		t.Fatalf("schemas %v", after.GetSchemas())
	}
	if !proto.Equal(after.GetSchemas()[0], before.GetSchemas()[0]) {
		t.Errorf("schema version 1 changed: %v", after.GetSchemas()[0])
	}
	if after.GetComment() != comment || after.GetAlteredAtMs() != h.nowMs {
		t.Errorf("comment %q altered at %d; want %q at %d", after.GetComment(), after.GetAlteredAtMs(), comment, h.nowMs)
	}
	// The feed carries the new record to the tablet nodes.
	if u := h.feedAt(h.index); len(u.GetTables()) != 1 || !proto.Equal(u.GetTables()[0], after) {
		t.Errorf("feed at %d: %v", h.index, u)
	}

	// A retry with the same request id answers the first result and adds
	// no second column.
	again := h.apply(withID("alter-1", alterTable(&pb.AlterTable{Database: "sales", Name: "events",
		AddColumns: []*pb.Column{{Name: "channel", Type: "STRING", Nullable: true}}, Comment: &comment,
		TableId: before.GetId(), ExpectedSchemaId: 1})))
	if ResultError(again) != nil || !proto.Equal(again.GetTable(), after) || len(h.table("events").GetSchemas()) != 2 {
		t.Fatalf("retry: %v; table %v", again, h.table("events"))
	}
	// Once the id is forgotten, the schema fence refuses it.
	wantRefused(t, h.apply(alterTable(&pb.AlterTable{Database: "sales", Name: "events",
		AddColumns: []*pb.Column{{Name: "channel", Type: "STRING", Nullable: true}}, ExpectedSchemaId: 1})),
		pb.ErrorCode_ERROR_CODE_FENCED, "schema version 2, not the expected 1")

	// Reset goes back to the default of the table's checks version.
	h.ok(alterTable(&pb.AlterTable{Database: "sales", Name: "events", ResetProperties: []string{"log.format", "log.ttl"}}))
	if got := h.table("events").GetProperties(); len(got) != 1 || got["min.insync.replicas"] != "3" {
		t.Errorf("after reset: %v", got)
	}
	// The same change again is unchanged and leaves the record alone.
	stored := h.table("events")
	res = h.ok(alterTable(&pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"min.insync.replicas": "3"}}))
	if !res.GetUnchanged() || !proto.Equal(h.table("events"), stored) {
		t.Errorf("same value again: %v", res)
	}
}

func TestAlterTableRefusals(t *testing.T) {
	h := ddlFixture(t)
	h.ok(eventsTable(nil))
	const invalid, fenced = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, pb.ErrorCode_ERROR_CODE_FENCED
	col := func(name, typ string, nullable bool) []*pb.Column {
		return []*pb.Column{{Name: name, Type: typ, Nullable: nullable}}
	}
	long := strings.Repeat("x", MaxCommentBytes+1)
	tests := []struct {
		name string
		c    *pb.AlterTable
		code pb.ErrorCode
		want []string
	}{
		{"unknown database", &pb.AlterTable{Database: "nope", Name: "events"}, pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE, []string{`"nope"`}},
		{"unknown table", &pb.AlterTable{Database: "sales", Name: "nope"}, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, []string{`"sales.nope"`}},
		{"other table id", &pb.AlterTable{Database: "sales", Name: "events", TableId: 99}, fenced, []string{"dropped and created again"}},
		{"immutable merge engine", &pb.AlterTable{Database: "sales", Name: "orders", SetProperties: map[string]string{"merge-engine": "first_row"}},
			invalid, []string{`"merge-engine" is immutable`, "how stored rows were merged"}},
		{"immutable reset", &pb.AlterTable{Database: "sales", Name: "orders", ResetProperties: []string{"changelog.image"}},
			invalid, []string{`"changelog.image" is immutable`}},
		{"bucket count", &pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"buckets": "6"}},
			invalid, []string{`"buckets" cannot change`, "bucket count is not a property"}},
		{"unknown property", &pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"log.tll": "1h"}},
			invalid, []string{`"log.tll": unknown property`, "valid properties"}},
		{"primary-key property on a log table", &pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"kv.snapshot.interval": "1h"}},
			invalid, []string{"primary-key tables only"}},
		{"bad value", &pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"log.ttl": "soon"}},
			invalid, []string{`log.ttl="soon"`, "want a duration"}},
		{"min.insync.replicas over replication", &pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"min.insync.replicas": "4"}},
			invalid, []string{"replication factor 3"}},
		{"arrow on a primary-key table", &pb.AlterTable{Database: "sales", Name: "orders", SetProperties: map[string]string{"log.format": "arrow"}},
			invalid, []string{"changelogs", "row-based"}},
		{"set and reset", &pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"log.ttl": "1h"}, ResetProperties: []string{"log.ttl"}},
			invalid, []string{"both set and reset"}},
		{"not null column", &pb.AlterTable{Database: "sales", Name: "events", AddColumns: col("c", "INT", false)},
			invalid, []string{`"c" is NOT NULL`, "must be nullable"}},
		{"existing column", &pb.AlterTable{Database: "sales", Name: "events", AddColumns: col("Note", "INT", true)},
			invalid, []string{`"Note" exists already`}},
		{"reserved column", &pb.AlterTable{Database: "sales", Name: "events", AddColumns: col("_offset", "INT", true)},
			invalid, []string{"reserved"}},
		{"bad column name", &pb.AlterTable{Database: "sales", Name: "events", AddColumns: col("a-b", "INT", true)},
			invalid, []string{"invalid column name"}},
		{"no type", &pb.AlterTable{Database: "sales", Name: "events", AddColumns: col("c", "", true)},
			invalid, []string{"no type"}},
		{"comment too long", &pb.AlterTable{Database: "sales", Name: "events", Comment: &long},
			invalid, []string{"MaxCommentBytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rawDump(t, h.s)
			wantRefused(t, h.apply(alterTable(tt.c)), tt.code, tt.want...)
			if after := rawDump(t, h.s); after != before {
				t.Errorf("a refused ALTER changed the state:\n%s\n%s", before, after)
			}
		})
	}
}

// TestAlterTableSchemaVersionsBound: the MaxSchemaVersions-th version is
// the last; a record grown past MaxTableRecordBytes is refused first.
func TestAlterTableSchemaVersionsBound(t *testing.T) {
	h := ddlFixture(t)
	h.ok(eventsTable(nil))
	tbl := h.table("events")
	for len(tbl.Schemas) < MaxSchemaVersions-1 { // stored directly: 998 ALTERs cost minutes
		tbl.Schemas = append(tbl.Schemas, &pb.SchemaVersion{Id: int32(len(tbl.Schemas) + 1), Columns: tbl.Schemas[0].Columns})
	}
	putTableRecord(t, h.s, tbl)
	add := func(name string) *pb.Command {
		return alterTable(&pb.AlterTable{Database: "sales", Name: "events", AddColumns: []*pb.Column{{Name: name, Type: "INT", Nullable: true}}})
	}
	h.ok(add("last"))
	wantRefused(t, h.apply(add("one_more")), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("MaxSchemaVersions %d", MaxSchemaVersions))
	if s := h.table("events").GetSchemas(); len(s) != MaxSchemaVersions || s[len(s)-1].GetId() != MaxSchemaVersions {
		t.Fatalf("%d schema versions, last id %d", len(s), s[len(s)-1].GetId())
	}

	wide := h.table("orders")
	for i := range 300 {
		wide.Schemas[0].Columns = append(wide.Schemas[0].Columns, &pb.Column{Name: fmt.Sprintf("column_%d", i), Type: "STRING", Nullable: true})
	}
	for len(wide.Schemas) < 200 {
		wide.Schemas = append(wide.Schemas, &pb.SchemaVersion{Id: int32(len(wide.Schemas) + 1), Columns: wide.Schemas[0].Columns})
	}
	putTableRecord(t, h.s, wide)
	wantRefused(t, h.apply(alterTable(&pb.AlterTable{Database: "sales", Name: "orders",
		AddColumns: []*pb.Column{{Name: "x", Type: "INT", Nullable: true}}})), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "MaxTableRecordBytes")
}

// putTableRecord stores t as it is, as a test's shortcut.
func putTableRecord(t *testing.T, s *State, rec *pb.TableRecord) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		return putRecord(tx.Bucket(bucketTables), tableKey(rec.GetDatabaseId(), rec.GetName()), rec)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAlterTableReplays: the same log applied to a fresh state, and a
// snapshot of the altered state restored, give the same file.
func TestAlterTableReplays(t *testing.T) {
	run := func(h *harness) {
		h.ok(initCluster("c1"))
		h.tabletNodes(3)
		h.ok(createDB("sales"))
		h.ok(eventsTable(nil))
		h.ok(withID("a", alterTable(&pb.AlterTable{Database: "sales", Name: "events",
			SetProperties: map[string]string{"log.ttl": "2h", "log.compression": "lz4"},
			AddColumns:    []*pb.Column{{Name: "c1", Type: "INT", Nullable: true}}})))
		h.apply(alterTable(&pb.AlterTable{Database: "sales", Name: "events", SetProperties: map[string]string{"merge-engine": "versioned"}}))
		h.ok(alterTable(&pb.AlterTable{Database: "sales", Name: "events", ResetProperties: []string{"log.ttl"},
			AddColumns: []*pb.Column{{Name: "c2", Type: "STRING", Nullable: true}}}))
	}
	a, b := newHarness(t), newHarness(t)
	run(a)
	run(b)
	if fullDump(t, a.s) != fullDump(t, b.s) {
		t.Fatal("two replicas of the same log differ")
	}
	c := newHarness(t)
	if err := c.s.Restore(snapshotOf(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if readDump(t, c.s) != readDump(t, a.s) {
		t.Fatal("a restored snapshot reads differently")
	}
	if s := c.table("events").GetSchemas(); len(s) != 3 {
		t.Fatalf("restored schemas %v", s)
	}
}
