package metastate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// ddlFixture: cluster "c1", three tablet nodes and one meta node, database
// "sales" with table "orders".
func ddlFixture(t *testing.T) *harness {
	h := newHarness(t)
	h.ok(initCluster("c1"))
	h.tabletNodes(3)
	h.ok(registerNode(9, "", RoleMeta))
	h.ok(createDB("sales"))
	h.ok(createTable(ordersTable("sales", "orders", nil)))
	return h
}

func TestRefusedCommandsChangeNothing(t *testing.T) {
	const (
		invalid     = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
		unknownDB   = pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE
		unknownTb   = pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE
		exists      = pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS
		notEnough   = pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS
		notEmpty    = pb.ErrorCode_ERROR_CODE_NOT_EMPTY
		fenced      = pb.ErrorCode_ERROR_CODE_FENCED
		longKeyLen  = MaxPropertyKeyBytes + 1
		longValLen  = MaxPropertyValueBytes + 1
		tooManyProp = MaxProperties + 1
	)
	longName := "n23456789" + strings.Repeat("x", maxNameBytes-8)
	table := func(edit func(*pb.CreateTable)) *pb.Command {
		return createTable(ordersTable("sales", "events", edit))
	}
	tests := []struct {
		name string
		cmd  *pb.Command
		code pb.ErrorCode
		want []string // substrings of the message
	}{
		{"empty command", &pb.Command{}, invalid, []string{"no known operation"}},
		{"init cluster other id", initCluster("c2"), fenced, []string{`"c1"`, `"c2"`}},
		{"init cluster empty id", initCluster(""), invalid, []string{"empty cluster id"}},

		{"register no node", &pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{}}}, invalid, []string{"no node"}},
		{"register node id 0", registerNode(0, "", RoleTablet), invalid, []string{"node id 0"}},
		{"register no roles", registerNode(4, ""), invalid, []string{"node 4", "no roles"}},
		{"register unknown role", registerNode(4, "", "storage"), invalid, []string{"node 4", `"storage"`}},
		{"register duplicate role", registerNode(4, "", RoleTablet, RoleTablet), invalid, []string{"node 4", `"tablet"`, "twice"}},
		{"register no address", func() *pb.Command {
			c := registerNode(4, "", RoleTablet)
			c.GetRegisterNode().Node.RpcAddress = ""
			return c
		}(), invalid, []string{"node 4", "rpc address"}},

		{"create database bad name", createDB("bad-name"), invalid, []string{`"bad-name"`}},
		{"create database empty name", createDB(""), invalid, []string{`""`}},
		{"create database long name", createDB(longName), invalid, []string{"n23456789"}},
		{"create database exists", createDB("sales"), exists, []string{`"sales"`}},

		{"drop database unknown", dropDB("nope", false, false), unknownDB, []string{`"nope"`}},
		{"drop database not empty", dropDB("sales", false, false), notEmpty, []string{`"sales"`, "holds 1 table;"}},

		{"create table unknown database", createTable(ordersTable("nope", "events", nil)), unknownDB, []string{`"nope"`}},
		{"create table bad name", createTable(ordersTable("sales", "bad name", nil)), invalid, []string{`"bad name"`}},
		{"create table long name", createTable(ordersTable("sales", longName, nil)), invalid, []string{"n23456789"}},
		{"create table exists", createTable(ordersTable("sales", "orders", nil)), exists, []string{`"sales.orders"`}},
		{"no columns", table(func(c *pb.CreateTable) { c.Columns, c.PrimaryKey = nil, nil }), invalid, []string{`"sales.events"`, "no columns"}},
		{"bad column name", table(func(c *pb.CreateTable) { c.Columns[3].Name = "a-b" }), invalid, []string{`"a-b"`}},
		{"empty column name", table(func(c *pb.CreateTable) { c.Columns[3].Name = "" }), invalid, []string{"column name", `""`}},
		{"duplicate column", table(func(c *pb.CreateTable) { c.Columns[3].Name = "amount" }), invalid, []string{"duplicate column", `"amount"`}},
		{"empty column type", table(func(c *pb.CreateTable) { c.Columns[2].Type = "" }), invalid, []string{`"amount"`, "no type"}},
		{"primary key unknown column", table(func(c *pb.CreateTable) { c.PrimaryKey = []string{"id", "nope"} }), invalid, []string{"primary key", `"nope"`}},
		{"primary key duplicate", table(func(c *pb.CreateTable) { c.PrimaryKey = []string{"id", "id"} }), invalid, []string{"primary key", `"id"`, "twice"}},
		{"primary key nullable", table(func(c *pb.CreateTable) { c.PrimaryKey = []string{"id", "note"} }), invalid, []string{"primary key", `"note"`, "nullable"}},
		{"bucket key unknown column", table(func(c *pb.CreateTable) { c.BucketKey = []string{"nope"} }), invalid, []string{"bucket key", `"nope"`}},
		{"bucket key duplicate", table(func(c *pb.CreateTable) { c.BucketKey = []string{"id", "id"} }), invalid, []string{"bucket key", `"id"`, "twice"}},
		{"bucket key outside primary key", table(func(c *pb.CreateTable) { c.BucketKey = []string{"amount"} }), invalid, []string{"bucket key", `"amount"`, "primary key"}},
		{"log table bucket key unknown", table(func(c *pb.CreateTable) { c.PrimaryKey, c.BucketKey = nil, []string{"nope"} }), invalid, []string{"bucket key", `"nope"`}},
		{"checks v2: nested type refused, as before nested types", table(func(c *pb.CreateTable) {
			c.Checks, c.Columns[3].Type = 2, "ARRAY<STRING>"
		}), invalid, []string{`"note"`, "nested type ARRAY<STRING> needs create-table checks 3"}},
		{"checks v0: nested type refused", table(func(c *pb.CreateTable) { c.Checks, c.Columns[3].Type = 0, "MAP<STRING, INT>" }),
			invalid, []string{`"note"`, "nested type"}},
		{"nested primary key column", table(func(c *pb.CreateTable) { c.Columns[1].Type = "ARRAY<STRING>" }),
			invalid, []string{`"region"`, "ARRAY<STRING> cannot be part of the primary key"}},
		{"nested bucket key column", table(func(c *pb.CreateTable) {
			c.PrimaryKey, c.BucketKey, c.Columns[3].Type = nil, []string{"note"}, "ROW<a INT>"
		}), invalid, []string{`"note"`, "ROW<a INT> cannot be part of the bucket key"}},
		{"negative buckets", table(func(c *pb.CreateTable) { c.Buckets = -1 }), invalid, []string{"buckets", "-1"}},
		{"too many buckets", table(func(c *pb.CreateTable) { c.Buckets = MaxBuckets + 1 }), invalid, []string{"buckets", "4097"}},
		{"negative replication", table(func(c *pb.CreateTable) { c.Replication = -1 }), invalid, []string{"replication", "-1"}},
		{"replication above tablet nodes", table(func(c *pb.CreateTable) { c.Replication = 4 }), notEnough, []string{`"sales.events"`, "replication 4", "3 registered tablet nodes"}},
		{"replication above live tablet nodes", table(func(c *pb.CreateTable) { c.Replication, c.LiveNodes = 3, []uint32{1, 2} }), notEnough,
			[]string{`"sales.events"`, "replication 3 exceeds the 2 live tablet nodes (3 registered)"}},
		{"no live tablet node", table(func(c *pb.CreateTable) { c.LiveNodes = []uint32{9} }), notEnough,
			[]string{`"sales.events"`, "none of the 3 registered tablet nodes is live"}},
		{"property empty key", table(func(c *pb.CreateTable) { c.Properties = map[string]string{"": "x"} }), invalid, []string{`""`, "unknown property"}},
		{"checks v1: a tiering property is unknown", table(func(c *pb.CreateTable) { c.Checks, c.Properties = 1, map[string]string{"log.ttl": "1d"} }),
			invalid, []string{`"log.ttl"`, "unknown property"}},
		{"bad log.segment.bytes", table(func(c *pb.CreateTable) { c.Properties = map[string]string{"log.segment.bytes": "1KiB"} }),
			invalid, []string{"log.segment.bytes", "64KiB"}},
		{"checks v0: property empty key", table(func(c *pb.CreateTable) { c.Checks, c.Properties = 0, map[string]string{"": "x"} }), invalid, []string{"empty key"}},
		{"checks v0: bad merge engine", table(func(c *pb.CreateTable) {
			c.Checks, c.Properties = 0, map[string]string{"merge-engine": "newest"}
		}), invalid, []string{"merge-engine", "newest"}},
		{"property long key", table(func(c *pb.CreateTable) {
			c.Properties = map[string]string{strings.Repeat("k", longKeyLen): "x"}
		}), invalid, []string{"property", "kkkk", fmt.Sprint(MaxPropertyKeyBytes)}},
		{"property long value", table(func(c *pb.CreateTable) {
			c.Properties = map[string]string{"retention": strings.Repeat("v", longValLen)}
		}), invalid, []string{`"retention"`, fmt.Sprint(MaxPropertyValueBytes)}},
		{"too many properties", table(func(c *pb.CreateTable) {
			c.Properties = map[string]string{}
			for i := range tooManyProp {
				c.Properties[fmt.Sprintf("p%d", i)] = "x"
			}
		}), invalid, []string{fmt.Sprint(tooManyProp), "properties"}},
		{"unknown property", table(func(c *pb.CreateTable) { c.Properties = map[string]string{"merge-engne": "first_row"} }), invalid,
			[]string{`"sales.events"`, `"merge-engne": unknown property`, "valid properties: ", "changelog.image (full|wal)", "min.insync.replicas (1 to the replication factor)"}},
		{"min.insync.replicas not a number", table(func(c *pb.CreateTable) { c.Properties = map[string]string{"min.insync.replicas": "abc"} }), invalid,
			[]string{`min.insync.replicas="abc"`, "from 1 to the replication factor 3", "valid properties"}},
		{"min.insync.replicas above replication", table(func(c *pb.CreateTable) {
			c.Replication = 1
			c.Properties = map[string]string{"min.insync.replicas": "5"}
		}), invalid, []string{`min.insync.replicas="5"`, "replication factor 1"}},
		{"merge engine on a log table", table(func(c *pb.CreateTable) {
			c.PrimaryKey = nil
			c.Properties = map[string]string{"merge-engine": "first_row"}
		}), invalid, []string{"merge-engine", "primary-key tables only"}},
		{"bad merge engine", table(func(c *pb.CreateTable) { c.Properties = map[string]string{"merge-engine": "newest"} }), invalid,
			[]string{`merge-engine="newest"`, "last_row, first_row, versioned"}},
		{"version column not a column", table(func(c *pb.CreateTable) {
			c.Properties = map[string]string{"merge-engine": "versioned", "merge-engine.version-column": "nope"}
		}), invalid, []string{"version column", `"nope"`}},
		{"reserved column name", table(func(c *pb.CreateTable) { c.Columns[3].Name = "_offset" }), invalid,
			[]string{`"_offset"`, "reserved", "_bucket, _offset, _timestamp, _change"}},

		{"drop table unknown database", dropTable("nope", "orders", false), unknownDB, []string{`"nope"`}},
		{"drop table unknown table", dropTable("sales", "nope", false), unknownTb, []string{`"sales.nope"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ddlFixture(t)
			before := rawDump(t, h.s)
			beforeReads := readDump(t, h.s)
			res := h.apply(tc.cmd)
			wantRefused(t, res, tc.code, tc.want...)
			if res.GetIndex() != h.index {
				t.Errorf("result index %d, want %d", res.GetIndex(), h.index)
			}
			if res.GetValue() != nil || res.GetUnchanged() {
				t.Errorf("refusal carries a value: %v", res)
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if after := readDump(t, h.s); strings.SplitN(after, "\n", 2)[1] != strings.SplitN(beforeReads, "\n", 2)[1] {
				t.Errorf("reads changed")
			}
			if got := h.s.AppliedIndex(); got != h.index {
				t.Errorf("applied index %d, want %d", got, h.index)
			}
			var e *Error
			if err := ResultError(res); err == nil {
				t.Fatal("ResultError: nil")
			} else if e = err.(*Error); e.WireCode() != tc.code || !strings.HasPrefix(e.Error(), "metastate: ") {
				t.Errorf("ResultError = %v (code %v)", e, e.WireCode())
			}
		})
	}
}

func TestNoTabletNodes(t *testing.T) {
	for _, rf := range []int32{0, 1} {
		t.Run(fmt.Sprint("replication ", rf), func(t *testing.T) {
			h := newHarness(t)
			h.ok(registerNode(1, "", RoleMeta))
			h.ok(createDB("sales"))
			before := rawDump(t, h.s)
			res := h.apply(createTable(ordersTable("sales", "orders", func(c *pb.CreateTable) { c.Replication = rf })))
			wantRefused(t, res, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, `"sales.orders"`, "no tablet nodes")
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed")
			}
		})
	}
}

func TestCreateTableDefaults(t *testing.T) {
	tests := []struct {
		name        string
		tablets     int
		edit        func(*pb.CreateTable)
		buckets     int32
		replication int32
		bucketKey   []string
	}{
		{"three tablets", 3, nil, 3, 3, []string{"id", "region"}},
		{"four tablets", 4, nil, 3, 3, []string{"id", "region"}},
		{"two tablets", 2, nil, 1, 2, []string{"id", "region"}},
		{"one tablet", 1, nil, 1, 1, []string{"id", "region"}},
		{"explicit", 4, func(c *pb.CreateTable) { c.Buckets, c.Replication, c.BucketKey = 8, 2, []string{"region"} }, 8, 2, []string{"region"}},
		{"max buckets", 1, func(c *pb.CreateTable) { c.Buckets = MaxBuckets }, MaxBuckets, 1, []string{"id", "region"}},
		{"log table without bucket key", 3, func(c *pb.CreateTable) { c.PrimaryKey = nil }, 3, 3, nil},
		{"log table with bucket key", 3, func(c *pb.CreateTable) { c.PrimaryKey, c.BucketKey = nil, []string{"note"} }, 3, 3, []string{"note"}},
		{"nested column under checks 3", 3, func(c *pb.CreateTable) { c.Columns[3].Type = "MAP<STRING, ARRAY<INT NOT NULL>>" }, 3, 3, []string{"id", "region"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.tabletNodes(tc.tablets)
			h.ok(registerNode(100, "", RoleMeta)) // not a tablet: never a replica
			h.ok(createDB("sales"))
			def := ordersTable("sales", "orders", tc.edit)
			def.Properties = map[string]string{"min.insync.replicas": "1"}
			if len(def.GetPrimaryKey()) > 0 {
				def.Properties["delete.behavior"] = "IGNORE" // kept as given
			}
			res := h.ok(createTable(def))
			tbl := res.GetTable()
			if tbl.GetId() != 1 || tbl.GetDatabaseId() != 1 || tbl.GetDatabase() != "sales" || tbl.GetName() != "orders" {
				t.Errorf("table identity: %v", tbl)
			}
			if tbl.GetBuckets() != tc.buckets || tbl.GetReplication() != tc.replication {
				t.Errorf("buckets %d replication %d, want %d %d", tbl.GetBuckets(), tbl.GetReplication(), tc.buckets, tc.replication)
			}
			if !slices.Equal(tbl.GetBucketKey(), tc.bucketKey) {
				t.Errorf("bucket key %v, want %v", tbl.GetBucketKey(), tc.bucketKey)
			}
			if len(tbl.GetSchemas()) != 1 || tbl.GetSchemas()[0].GetId() != 1 ||
				!proto.Equal(&pb.SchemaVersion{Id: 1, Columns: def.GetColumns()}, tbl.GetSchemas()[0]) {
				t.Errorf("schemas %v", tbl.GetSchemas())
			}
			if !slices.Equal(tbl.GetPrimaryKey(), def.GetPrimaryKey()) || !maps.Equal(tbl.GetProperties(), def.GetProperties()) || tbl.GetCreatedAtMs() != h.nowMs {
				t.Errorf("table %v", tbl)
			}
			got, buckets, err := h.s.Table("sales", "orders")
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tbl) {
				t.Errorf("read %v, want %v", got, tbl)
			}
			if len(buckets) != int(tc.buckets) {
				t.Fatalf("%d bucket records, want %d", len(buckets), tc.buckets)
			}
			for i, b := range buckets {
				r := b.GetReplicas()
				if b.GetTableId() != 1 || b.GetBucket() != int32(i) || len(r) != int(tc.replication) ||
					b.GetLeader() != r[0] || !slices.Equal(b.GetIsr(), r) || b.GetLeaderEpoch() != 0 || b.GetBucketEpoch() != 0 {
					t.Errorf("bucket %d: %v", i, b)
				}
				seen := map[uint32]bool{}
				for _, n := range r {
					if seen[n] || n < 1 || n > uint32(tc.tablets) {
						t.Errorf("bucket %d: bad replicas %v", i, r)
					}
					seen[n] = true
				}
				one, err := h.s.Bucket(1, int32(i))
				if err != nil || !proto.Equal(one, b) {
					t.Errorf("Bucket(1, %d) = %v, %v", i, one, err)
				}
			}
		})
	}
}

func TestIfExistsAndIfNotExists(t *testing.T) {
	h := ddlFixture(t)
	db, err := h.s.Database("sales")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _, err := h.s.Table("sales", "orders")
	if err != nil {
		t.Fatal(err)
	}
	before := rawDump(t, h.s)
	tests := []struct {
		name  string
		cmd   *pb.Command
		value proto.Message
	}{
		{"create database", &pb.Command{Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: "sales", IfNotExists: true}}}, db},
		{"drop database", dropDB("nope", true, true), nil},
		{"create table", createTable(ordersTable("sales", "orders", func(c *pb.CreateTable) {
			c.IfNotExists = true
			c.Columns = nil // not checked: the table exists
		})), tbl},
		{"drop table", dropTable("sales", "nope", true), nil},
		{"drop table unknown database", dropTable("nope", "orders", true), nil},
		{"init cluster again", initCluster("c1"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.ok(tc.cmd)
			if !res.GetUnchanged() {
				t.Errorf("unchanged not set: %v", res)
			}
			var got proto.Message
			switch v := res.GetValue().(type) {
			case *pb.CommandResult_Database:
				got = v.Database
			case *pb.CommandResult_Table:
				got = v.Table
			}
			if (tc.value == nil) != (got == nil) || (got != nil && !proto.Equal(got, tc.value)) {
				t.Errorf("value %v, want %v", got, tc.value)
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed")
			}
		})
	}
}

func TestDatabasesAndTables(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	for _, name := range []string{"zeta", "alpha", "Mid_1"} {
		res := h.ok(createDB(name))
		if res.GetDatabase().GetName() != name || res.GetDatabase().GetCreatedAtMs() != h.nowMs {
			t.Errorf("create %s: %v", name, res)
		}
	}
	if got := names(h.s.Databases()); !slices.Equal(got, []string{"Mid_1", "alpha", "zeta"}) {
		t.Errorf("databases %v", got)
	}
	ids := map[uint64]bool{}
	for _, db := range []string{"alpha", "zeta"} {
		for _, tb := range []string{"t2", "t1"} {
			id := h.ok(createTable(ordersTable(db, tb, nil))).GetTable().GetId()
			if ids[id] {
				t.Errorf("table id %d reused", id)
			}
			ids[id] = true
		}
	}
	tables, err := h.s.Tables("alpha")
	if err != nil || !slices.Equal(names(tables), []string{"t1", "t2"}) {
		t.Errorf("Tables(alpha) = %v, %v", names(tables), err)
	}
	if tables, err := h.s.Tables("Mid_1"); err != nil || len(tables) != 0 {
		t.Errorf("Tables(Mid_1) = %v, %v", tables, err)
	}
	_, err = h.s.Tables("nope")
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE)
	_, err = h.s.Database("nope")
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE)
	_, _, err = h.s.Table("nope", "t1")
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE)
	_, _, err = h.s.Table("alpha", "nope")
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE)
	_, err = h.s.Bucket(99, 0)
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE)

	// Drop one table: the other and the other database keep theirs.
	dropped := h.ok(dropTable("alpha", "t1", false)).GetTable()
	if dropped.GetName() != "t1" || dropped.GetDatabase() != "alpha" {
		t.Errorf("dropped %v", dropped)
	}
	if _, err := h.s.Bucket(dropped.GetId(), 0); err == nil {
		t.Errorf("bucket of a dropped table still there")
	}
	if tables, _ := h.s.Tables("alpha"); !slices.Equal(names(tables), []string{"t2"}) {
		t.Errorf("after drop: %v", names(tables))
	}
	if tables, _ := h.s.Tables("zeta"); !slices.Equal(names(tables), []string{"t1", "t2"}) {
		t.Errorf("zeta: %v", names(tables))
	}
	// A new table gets a new id, never the dropped one's.
	if id := h.ok(createTable(ordersTable("alpha", "t1", nil))).GetTable().GetId(); ids[id] {
		t.Errorf("table id %d reused after drop", id)
	}
}

func TestDropDatabaseCascade(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("sales"))
	h.ok(createDB("other"))
	var tableIDs []uint64
	for _, name := range []string{"a", "b", "c"} {
		tableIDs = append(tableIDs, h.ok(createTable(ordersTable("sales", name, nil))).GetTable().GetId())
	}
	kept := h.ok(createTable(ordersTable("other", "a", nil))).GetTable()

	wantRefused(t, h.apply(dropDB("sales", false, false)), pb.ErrorCode_ERROR_CODE_NOT_EMPTY, `"sales"`, "3 tables")
	res := h.ok(dropDB("sales", true, false))
	if res.GetDatabase().GetName() != "sales" {
		t.Errorf("dropped %v", res)
	}
	if got := names(h.s.Databases()); !slices.Equal(got, []string{"other"}) {
		t.Errorf("databases %v", got)
	}
	for _, id := range tableIDs {
		for b := range int32(3) {
			if _, err := h.s.Bucket(id, b); err == nil {
				t.Errorf("bucket %d/%d survived the cascade", id, b)
			}
		}
	}
	if _, buckets, err := h.s.Table("other", "a"); err != nil || len(buckets) != 3 {
		t.Errorf("other.a: %d buckets, %v", len(buckets), err)
	}
	if _, err := h.s.Bucket(kept.GetId(), 2); err != nil {
		t.Errorf("other bucket lost: %v", err)
	}
	// Re-created, the database is new and empty.
	db := h.ok(createDB("sales")).GetDatabase()
	if db.GetId() != 3 {
		t.Errorf("new database id %d, want 3", db.GetId())
	}
	if tables, err := h.s.Tables("sales"); err != nil || len(tables) != 0 {
		t.Errorf("tables after re-create: %v, %v", names(tables), err)
	}
	// An empty database drops without cascade.
	h.ok(dropDB("sales", false, false))
}

func TestPlacementAcrossTables(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("sales"))
	// One-bucket single-replica tables spread over the nodes in turn.
	var nodes []uint32
	for i := range 6 {
		h.ok(createTable(ordersTable("sales", fmt.Sprint("t", i), func(c *pb.CreateTable) { c.Buckets, c.Replication = 1, 1 })))
		_, buckets, err := h.s.Table("sales", fmt.Sprint("t", i))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, buckets[0].GetReplicas()[0])
	}
	if !slices.Equal(nodes, []uint32{1, 2, 3, 1, 2, 3}) {
		t.Errorf("replicas %v", nodes)
	}
}

func TestPlacementUsesRacks(t *testing.T) {
	h := newHarness(t)
	for i, rack := range []string{"a", "a", "a", "b", "c"} {
		h.ok(registerNode(uint32(i+1), rack, RoleTablet, RoleMeta))
	}
	h.ok(createDB("sales"))
	h.ok(createTable(ordersTable("sales", "t", func(c *pb.CreateTable) { c.Buckets = 16 })))
	_, buckets, err := h.s.Table("sales", "t")
	if err != nil {
		t.Fatal(err)
	}
	rackOf := map[uint32]string{1: "a", 2: "a", 3: "a", 4: "b", 5: "c"}
	for _, b := range buckets {
		racks := map[string]bool{}
		for _, r := range b.GetReplicas() {
			racks[rackOf[r]] = true
		}
		if len(racks) != 3 {
			t.Errorf("bucket %d replicas %v span %d racks", b.GetBucket(), b.GetReplicas(), len(racks))
		}
	}
}

func TestNodesAndCluster(t *testing.T) {
	h := newHarness(t)
	if h.s.ClusterID() != "" {
		t.Errorf("cluster id before init: %q", h.s.ClusterID())
	}
	h.ok(initCluster("c1"))
	if h.s.ClusterID() != "c1" {
		t.Errorf("cluster id %q", h.s.ClusterID())
	}
	for _, id := range []uint32{3, 1, 2} {
		cmd := registerNode(id, "r1", RoleMeta, RoleTablet)
		cmd.GetRegisterNode().Node.Incarnation = "inc-a"
		cmd.GetRegisterNode().Node.NodeEpoch = 999 // set by the state machine
		res := h.ok(cmd)
		n := res.GetNode()
		if n.GetId() != id || n.GetNodeEpoch() != h.index || n.GetRegisteredAtMs() != h.nowMs || n.GetIncarnation() != "inc-a" {
			t.Errorf("registered %v", n)
		}
	}
	var ids []uint32
	for _, n := range h.s.Nodes() {
		ids = append(ids, n.GetId())
	}
	if !slices.Equal(ids, []uint32{1, 2, 3}) {
		t.Errorf("nodes %v", ids)
	}
	// Re-registering replaces the record with a new epoch.
	cmd := registerNode(2, "r9", RoleTablet)
	cmd.GetRegisterNode().Node.Incarnation = "inc-b"
	h.ok(cmd)
	n, err := h.s.Node(2)
	if err != nil {
		t.Fatal(err)
	}
	if n.GetNodeEpoch() != h.index || n.GetRack() != "r9" || n.GetIncarnation() != "inc-b" || !slices.Equal(n.GetRoles(), []string{RoleTablet}) {
		t.Errorf("re-registered %v", n)
	}
	if len(h.s.Nodes()) != 3 {
		t.Errorf("%d nodes after re-register", len(h.s.Nodes()))
	}
	_, err = h.s.Node(7)
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE)
}

// TestCreateTableChecksV0: a create committed by a build before the
// property registry (Checks 0) applies as it did then, so that replaying
// an old log after an upgrade gives the same state: unknown properties and
// column names starting with _ are stored.
func TestCreateTableChecksV0(t *testing.T) {
	for _, checks := range []uint32{0, CreateTableChecks} {
		h := newHarness(t)
		h.tabletNodes(3)
		h.ok(createDB("sales"))
		res := h.apply(createTable(ordersTable("sales", "old", func(c *pb.CreateTable) {
			c.Checks = checks
			c.Columns[3].Name = "_offset"
			c.Properties = map[string]string{"table.log.ttl": "7d", "min.insync.replicas": "abc"}
		})))
		if checks == 0 {
			if err := ResultError(res); err != nil {
				t.Fatalf("checks 0: %v", err)
			}
		} else {
			wantRefused(t, res, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "reserved")
		}
	}
}

// TestCreatedChecksDecideLogTTL: a table record keeps the create-table
// checks version its create was applied by, and the replicas' reading of
// it (tableprop.ParseStored) gives a table from before log.ttl existed no
// age retention, as it had, and one created since the 7-day default. A
// record stored by a build that did not record the version reads as from
// before log.ttl.
func TestCreatedChecksDecideLogTTL(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("sales"))
	logTTL := func(rec *pb.TableRecord) time.Duration {
		t.Helper()
		v, err := tableprop.ParseStored(rec.GetProperties(), tableprop.Table{Replication: int(rec.GetReplication()),
			PrimaryKey: len(rec.GetPrimaryKey()) > 0, CreatedChecks: rec.GetChecks()})
		if err != nil {
			t.Fatal(err)
		}
		return v.LogTTL
	}
	for _, tt := range []struct {
		checks uint32
		want   time.Duration
	}{
		{0, 0},
		{1, 0},
		{CreateTableChecks, tableprop.DefaultLogTTL},
	} {
		name := fmt.Sprintf("v%d", tt.checks)
		res := h.ok(createTable(ordersTable("sales", name, func(c *pb.CreateTable) { c.Checks = tt.checks })))
		rec := res.GetTable()
		if rec.GetChecks() != tt.checks {
			t.Fatalf("%s: the record keeps checks %d, want %d", name, rec.GetChecks(), tt.checks)
		}
		if got := logTTL(rec); got != tt.want {
			t.Fatalf("%s: log.ttl %v, want %v", name, got, tt.want)
		}
	}
	// As a build from before the field stored it: the same record, less
	// the version.
	old := proto.Clone(h.ok(createTable(ordersTable("sales", "unrecorded", nil))).GetTable()).(*pb.TableRecord)
	old.Checks = 0
	if got := logTTL(old); got != 0 {
		t.Fatalf("a record without its checks version: log.ttl %v, want forever", got)
	}
}
