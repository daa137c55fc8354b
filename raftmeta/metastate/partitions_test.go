package metastate

import (
	"fmt"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// dailyTable is sales.daily, a log table partitioned by dt (a STRING)
// whose partitions have two buckets of two replicas; edit sets fields.
func dailyTable(edit func(*pb.CreateTable)) *pb.CreateTable {
	c := &pb.CreateTable{
		Database: "sales",
		Name:     "daily",
		Columns: []*pb.Column{
			{Name: "dt", Type: "STRING"},
			{Name: "id", Type: "BIGINT"},
			{Name: "shop", Type: "INT"},
			{Name: "day", Type: "DATE"},
			{Name: "price", Type: "DOUBLE"},
			{Name: "note", Type: "STRING", Nullable: true},
		},
		PartitionKeys: []string{"dt"},
		Buckets:       2,
		Replication:   2,
		Checks:        CreateTableChecks,
	}
	if edit != nil {
		edit(c)
	}
	return c
}

func createPartition(c *pb.CreatePartition) *pb.Command {
	return &pb.Command{Op: &pb.Command_CreatePartition{CreatePartition: c}}
}

func dropPartition(c *pb.DropPartition) *pb.Command {
	return &pb.Command{Op: &pb.Command_DropPartition{DropPartition: c}}
}

// partitionOf is a CreatePartition of sales.table.
func partitionOf(table string, values ...string) *pb.CreatePartition {
	return &pb.CreatePartition{Database: "sales", Table: table, Values: values}
}

// partitionDrop is a DropPartition of sales.table.
func partitionDrop(table string, values ...string) *pb.DropPartition {
	return &pb.DropPartition{Database: "sales", Table: table, Values: values}
}

// read runs fn on a view of the state.
func (h *harness) read(fn func(v *View) error) {
	h.t.Helper()
	if err := h.s.Read(fn); err != nil {
		h.t.Fatal(err)
	}
}

// physicalBuckets returns the buckets keyed by id: a table's or a
// partition's.
func (h *harness) physicalBuckets(id uint64) []*pb.BucketRecord {
	h.t.Helper()
	var out []*pb.BucketRecord
	h.read(func(v *View) (err error) {
		out, err = v.Buckets(id)
		return err
	})
	return out
}

// partitions returns a table's partitions.
func (h *harness) partitions(tableID uint64) []*pb.PartitionRecord {
	h.t.Helper()
	var out []*pb.PartitionRecord
	h.read(func(v *View) (err error) {
		out, err = v.Partitions(tableID)
		return err
	})
	return out
}

// image is the state's Image.
func (h *harness) image() *pb.MetadataUpdate {
	h.t.Helper()
	img, err := h.s.Image()
	if err != nil {
		h.t.Fatal(err)
	}
	return img
}

func partitionIDs(ps []*pb.PartitionRecord) []uint64 {
	out := make([]uint64, len(ps))
	for i, p := range ps {
		out[i] = p.GetId()
	}
	return out
}

func sortedIDs(ids []uint64) []uint64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// bucketsKeyedBy filters buckets by the id they are keyed by.
func bucketsKeyedBy(buckets []*pb.BucketRecord, id uint64) []*pb.BucketRecord {
	return slices.DeleteFunc(slices.Clone(buckets), func(b *pb.BucketRecord) bool { return b.GetTableId() != id })
}

func equalRecords[M proto.Message](a, b []M) bool {
	return slices.EqualFunc(a, b, func(x, y M) bool { return proto.Equal(x, y) })
}

// TestCreatePartitionedTable: a partitioned table is stored with its
// partition columns and no buckets of its own (its partitions have them);
// a primary-key table's bucket key leaves out the partition columns, which
// are the same for every row of a partition.
func TestCreatePartitionedTable(t *testing.T) {
	tests := []struct {
		name      string
		def       *pb.CreateTable
		bucketKey []string
	}{
		{"log table", dailyTable(nil), nil},
		{"log table with a bucket key", dailyTable(func(c *pb.CreateTable) { c.BucketKey = []string{"id"} }), []string{"id"}},
		{"primary key (dt, id)", dailyTable(func(c *pb.CreateTable) { c.PrimaryKey = []string{"dt", "id"} }), []string{"id"}},
		// Parsing the properties with another replication factor than
		// the table's must not lose the bucket key.
		{"primary key (dt, id), min.insync.replicas 2", dailyTable(func(c *pb.CreateTable) {
			c.PrimaryKey, c.Properties = []string{"dt", "id"}, map[string]string{"min.insync.replicas": "2"}
		}), []string{"id"}},
		{"primary key (dt) alone", dailyTable(func(c *pb.CreateTable) { c.PrimaryKey = []string{"dt"} }), []string{"dt"}},
		{"primary key with a bucket key given", dailyTable(func(c *pb.CreateTable) {
			c.PrimaryKey, c.BucketKey = []string{"dt", "id", "shop"}, []string{"shop"}
		}), []string{"shop"}},
		{"two partition columns", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.PrimaryKey = []string{"dt", "shop"}, []string{"shop", "id", "dt"}
		}), []string{"id"}},
		{"auto-partition by day on a DATE column", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = []string{"day"}, map[string]string{tableprop.AutoPartitionTimeUnit: "day"}
		}), nil},
		{"auto-partition by hour on a STRING column", dailyTable(func(c *pb.CreateTable) {
			c.Properties = map[string]string{tableprop.AutoPartitionTimeUnit: "hour", tableprop.AutoPartitionTimeZone: "Europe/Berlin",
				tableprop.PartitionDynamicCreate: "true", tableprop.AutoPartitionNumRetention: "48"}
		}), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ddlFixture(t)
			bucketsBefore := h.image().GetBuckets()
			rec := h.ok(createTable(tc.def)).GetTable()
			if !slices.Equal(rec.GetPartitionKeys(), tc.def.GetPartitionKeys()) {
				t.Errorf("partition keys %v, want %v", rec.GetPartitionKeys(), tc.def.GetPartitionKeys())
			}
			if !slices.Equal(rec.GetBucketKey(), tc.bucketKey) {
				t.Errorf("bucket key %v, want %v", rec.GetBucketKey(), tc.bucketKey)
			}
			// The bucket count and replication are each partition's.
			if rec.GetBuckets() != 2 || rec.GetReplication() != 2 || rec.GetChecks() != CreateTableChecks {
				t.Errorf("table %v", rec)
			}
			stored, buckets, err := h.s.Table("sales", "daily")
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(stored, rec) || len(buckets) != 0 {
				t.Errorf("stored %v with %d buckets; want %v and none", stored, len(buckets), rec)
			}
			if got := h.physicalBuckets(rec.GetId()); len(got) != 0 {
				t.Errorf("buckets of the table: %v", got)
			}
			if got := h.image().GetBuckets(); !equalRecords(got, bucketsBefore) {
				t.Errorf("buckets changed: %v", got)
			}
			if got := h.partitions(rec.GetId()); len(got) != 0 {
				t.Errorf("partitions of a new table: %v", got)
			}
			u := h.feedAt(h.index)
			if len(u.GetTables()) != 1 || !proto.Equal(u.GetTables()[0], rec) || len(u.GetBuckets())+len(u.GetPartitions()) != 0 {
				t.Errorf("feed at %d: %v", h.index, u)
			}
		})
	}
}

func TestCreatePartitionedTableRefusals(t *testing.T) {
	const invalid = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
	unit := tableprop.AutoPartitionTimeUnit
	tests := []struct {
		name string
		def  *pb.CreateTable
		want []string // substrings of the message
	}{
		{"nullable partition column", dailyTable(func(c *pb.CreateTable) { c.PartitionKeys = []string{"note"} }),
			[]string{`"sales.daily"`, `partition column "note" is nullable`}},
		{"DOUBLE partition column", dailyTable(func(c *pb.CreateTable) { c.PartitionKeys = []string{"price"} }),
			[]string{`"sales.daily"`, `partition column "price" is DOUBLE`}},
		{"partition column outside the primary key", dailyTable(func(c *pb.CreateTable) { c.PrimaryKey = []string{"id"} }),
			[]string{`"sales.daily"`, `partition column "dt" is not in the primary key (id)`}},
		{"unknown partition column", dailyTable(func(c *pb.CreateTable) { c.PartitionKeys = []string{"nope"} }),
			[]string{`"sales.daily"`, `partition column "nope" is not a column of the table`}},
		{"partition column twice", dailyTable(func(c *pb.CreateTable) { c.PartitionKeys = []string{"dt", "dt"} }),
			[]string{`"sales.daily"`, `partition column "dt" named twice`}},
		{"five partition columns", dailyTable(func(c *pb.CreateTable) { c.PartitionKeys = []string{"dt", "id", "shop", "day", "note"} }),
			[]string{`"sales.daily"`, "5 partition columns, at most 4"}},
		{"checks 4", dailyTable(func(c *pb.CreateTable) { c.Checks = tableprop.ChecksLogFormat }),
			[]string{`"sales.daily"`, "partition columns need create-table checks 5 (this command has 4)"}},
		{"checks 0", dailyTable(func(c *pb.CreateTable) { c.Checks = 0 }),
			[]string{`"sales.daily"`, "partition columns need create-table checks 5 (this command has 0)"}},
		{"time unit with two partition columns", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = []string{"dt", "day"}, map[string]string{unit: "day"}
		}), []string{`"sales.daily"`, unit + " needs exactly one partition column, the table has 2"}},
		{"time unit on an INT column", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = []string{"shop"}, map[string]string{unit: "day"}
		}), []string{`"sales.daily"`, `partition column "shop" is an integer`}},
		{"hour on a DATE column", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = []string{"day"}, map[string]string{unit: "hour"}
		}), []string{`"sales.daily"`, unit + `=hour: partition column "day" is a DATE`}},
		{"month on a DATE column", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = []string{"day"}, map[string]string{unit: "month"}
		}), []string{`"sales.daily"`, unit + `=month: partition column "day" is a DATE`}},
		// The auto-partition checks must not depend on how the other
		// properties parse.
		{"time unit on an INT column, min.insync.replicas 2", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = []string{"shop"}, map[string]string{unit: "day", "min.insync.replicas": "2"}
		}), []string{`"sales.daily"`, `partition column "shop" is an integer`}},
		{"unknown time unit", dailyTable(func(c *pb.CreateTable) { c.Properties = map[string]string{unit: "week"} }),
			[]string{`"sales.daily"`, unit + `="week"`, "want one of year, quarter, month, day, hour"}},
		{"bad time zone", dailyTable(func(c *pb.CreateTable) {
			c.Properties = map[string]string{unit: "day", tableprop.AutoPartitionTimeZone: "Local"}
		}), []string{`"sales.daily"`, tableprop.AutoPartitionTimeZone, "IANA time zone"}},
		{"time unit on an unpartitioned table", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = nil, map[string]string{unit: "day"}
		}), []string{`"sales.daily"`, unit, "applies to partitioned tables only"}},
		{"dynamic-create on an unpartitioned table", dailyTable(func(c *pb.CreateTable) {
			c.PartitionKeys, c.Properties = nil, map[string]string{tableprop.PartitionDynamicCreate: "true"}
		}), []string{`"sales.daily"`, tableprop.PartitionDynamicCreate, "applies to partitioned tables only"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ddlFixture(t)
			before := rawDump(t, h.s)
			res := h.apply(createTable(tc.def))
			wantRefused(t, res, invalid, tc.want...)
			if res.GetValue() != nil {
				t.Errorf("refusal carries a value: %v", res)
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if u := h.feedAt(h.index); u != nil {
				t.Errorf("feed at %d: %v", h.index, u)
			}
		})
	}
}

// TestCreatePartition: a partition gets an id from the table counter and
// its own buckets, the table's count and replication, placed over the
// tablet nodes with what they host already, and led.
func TestCreatePartition(t *testing.T) {
	h := ddlFixture(t)
	tbl := h.ok(createTable(dailyTable(nil))).GetTable()

	res := h.ok(createPartition(partitionOf("daily", "2026-12-03")))
	p := res.GetPartition()
	want := &pb.PartitionRecord{Id: tbl.GetId() + 1, TableId: tbl.GetId(), Values: []string{"2026-12-03"}, Name: "dt=2026-12-03",
		CreatedAtMs: h.nowMs, Origin: pb.PartitionOrigin_PARTITION_ORIGIN_EXPLICIT}
	if !proto.Equal(p, want) || res.GetUnchanged() {
		t.Fatalf("created %v (unchanged %v), want %v", p, res.GetUnchanged(), want)
	}
	buckets := h.physicalBuckets(p.GetId())
	if len(buckets) != 2 {
		t.Fatalf("%d buckets, want 2: %v", len(buckets), buckets)
	}
	for i, b := range buckets {
		r := b.GetReplicas()
		if b.GetTableId() != p.GetId() || b.GetBucket() != int32(i) || len(r) != 2 || r[0] == r[1] ||
			b.GetLeader() != r[0] || !slices.Equal(b.GetIsr(), r) || b.GetLeaderEpoch() != 0 || b.GetBucketEpoch() != 0 {
			t.Errorf("bucket %d: %v", i, b)
		}
		for _, id := range r {
			if id < 1 || id > 3 {
				t.Errorf("bucket %d on node %d, not a tablet node", i, id)
			}
		}
	}
	u := h.feedAt(h.index)
	if len(u.GetPartitions()) != 1 || !proto.Equal(u.GetPartitions()[0], p) || !equalRecords(u.GetBuckets(), buckets) ||
		len(u.GetTables())+len(u.GetDroppedTables())+len(u.GetDroppedPartitions()) != 0 {
		t.Errorf("feed at %d: %v", h.index, u)
	}

	// A retry of a create that was applied answers its result, not
	// ALREADY_EXISTS.
	first := h.ok(withID("p-2", createPartition(partitionOf("daily", "2026-12-04")))).GetPartition()
	again := h.apply(withID("p-2", createPartition(partitionOf("daily", "2026-12-04"))))
	if ResultError(again) != nil || !proto.Equal(again.GetPartition(), first) {
		t.Fatalf("retry: %v, want %v", again, first)
	}
	if first.GetId() != p.GetId()+1 {
		t.Errorf("second partition id %d, want %d", first.GetId(), p.GetId()+1)
	}
	// Tables draw from the same counter.
	if next := h.ok(createTable(ordersTable("sales", "later", nil))).GetTable(); next.GetId() != first.GetId()+1 {
		t.Errorf("table after the partitions has id %d, want %d", next.GetId(), first.GetId()+1)
	}

	got := h.partitions(tbl.GetId())
	if len(got) != 2 || !proto.Equal(got[0], p) || !proto.Equal(got[1], first) {
		t.Errorf("partitions %v", got)
	}
	// Each placement counted the ones before it: replicas and preferred
	// leaders stay within one of each other over the nodes.
	replicas, leaders := map[uint32]int{}, map[uint32]int{}
	for _, b := range h.image().GetBuckets() {
		for _, id := range b.GetReplicas() {
			replicas[id]++
		}
		leaders[b.GetReplicas()[0]]++
	}
	for _, count := range []map[uint32]int{replicas, leaders} {
		lo, hi := count[1], count[1]
		for id := uint32(1); id <= 3; id++ {
			lo, hi = min(lo, count[id]), max(hi, count[id])
		}
		if hi-lo > 1 {
			t.Errorf("replicas by node %v, leaders by node %v: not within one", replicas, leaders)
		}
	}
}

// TestCreatePartitionIfNotExists: concurrent creates of one partition (two
// writers meeting its first rows) come out as one partition; values are
// compared in canonical text.
func TestCreatePartitionIfNotExists(t *testing.T) {
	h := ddlFixture(t)
	tbl := h.ok(createTable(dailyTable(func(c *pb.CreateTable) { c.PartitionKeys = []string{"shop"} }))).GetTable()
	c := partitionOf("daily", "+007")
	c.IfNotExists = true
	p := h.ok(createPartition(c)).GetPartition()
	if !slices.Equal(p.GetValues(), []string{"7"}) || p.GetName() != "shop=7" {
		t.Fatalf("created %v, want shop=7", p)
	}
	for _, v := range []string{"7", "007", " 7"} {
		before := rawDump(t, h.s)
		c := partitionOf("daily", v)
		c.IfNotExists, c.Origin = true, pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE
		res := h.ok(createPartition(c))
		if !res.GetUnchanged() || !proto.Equal(res.GetPartition(), p) {
			t.Errorf("%q again: %v, want %v unchanged", v, res, p)
		}
		if after := rawDump(t, h.s); after != before {
			t.Errorf("%q again changed the state", v)
		}
		if u := h.feedAt(h.index); u != nil {
			t.Errorf("%q again: feed %v", v, u)
		}
	}
	wantRefused(t, h.apply(createPartition(partitionOf("daily", "7"))), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS,
		"partition shop=7", `"sales.daily"`, "already exists")
	if got := h.partitions(tbl.GetId()); len(got) != 1 || !proto.Equal(got[0], p) {
		t.Errorf("partitions %v, want only %v", got, p)
	}
	if got := len(h.image().GetBuckets()); got != 3+2 {
		t.Errorf("%d buckets, want the 3 of orders and the 2 of one partition", got)
	}
}

// TestCreatePartitionOrigins: a writer creates the partitions it meets
// only when the table says so (partition.dynamic-create, off by default
// when the controller creates them by time); explicit and scheduled creates
// always may.
func TestCreatePartitionOrigins(t *testing.T) {
	const (
		explicit = pb.PartitionOrigin_PARTITION_ORIGIN_EXPLICIT
		onWrite  = pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE
		auto     = pb.PartitionOrigin_PARTITION_ORIGIN_AUTO
	)
	unit, dynamic := tableprop.AutoPartitionTimeUnit, tableprop.PartitionDynamicCreate
	tests := []struct {
		name    string
		props   map[string]string
		onWrite bool // ON_WRITE creates are accepted
	}{
		{"default", nil, true},
		{"dynamic-create=true", map[string]string{dynamic: "true"}, true},
		{"dynamic-create=false", map[string]string{dynamic: "false"}, false},
		{"time unit", map[string]string{unit: "day"}, false},
		{"time unit, dynamic-create=TRUE", map[string]string{unit: "day", dynamic: "TRUE"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ddlFixture(t)
			tbl := h.ok(createTable(dailyTable(func(c *pb.CreateTable) { c.Properties = tc.props }))).GetTable()
			for _, origin := range []pb.PartitionOrigin{explicit, auto} {
				c := partitionOf("daily", fmt.Sprint("2026-12-0", int(origin)+1))
				c.Origin = origin
				if p := h.ok(createPartition(c)).GetPartition(); p.GetOrigin() != origin {
					t.Errorf("origin %v stored as %v", origin, p.GetOrigin())
				}
			}
			c := partitionOf("daily", "2026-12-09")
			c.Origin = onWrite
			if tc.onWrite {
				if p := h.ok(createPartition(c)).GetPartition(); p.GetOrigin() != onWrite {
					t.Errorf("origin %v stored as %v", onWrite, p.GetOrigin())
				}
				return
			}
			before := rawDump(t, h.s)
			wantRefused(t, h.apply(createPartition(c)), pb.ErrorCode_ERROR_CODE_UNKNOWN_PARTITION,
				"partition dt=2026-12-09", `"sales.daily"`, dynamic+"=false")
			if after := rawDump(t, h.s); after != before {
				t.Errorf("a refused create changed the state")
			}
			if got := names(h.partitions(tbl.GetId())); !slices.Equal(got, []string{"dt=2026-12-01", "dt=2026-12-03"}) {
				t.Errorf("partitions %v", got)
			}
		})
	}
}

// TestCreatePartitionRefusals: each refusal names the problem and changes
// nothing.
func TestCreatePartitionRefusals(t *testing.T) {
	const (
		invalid = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
		fenced  = pb.ErrorCode_ERROR_CODE_FENCED
	)
	h := ddlFixture(t)
	stale := h.ok(createTable(dailyTable(nil))).GetTable().GetId()
	h.ok(dropTable("sales", "daily", false))
	h.ok(createTable(dailyTable(nil)))
	h.ok(createPartition(partitionOf("daily", "2026-12-03")))
	h.ok(createTable(dailyTable(func(c *pb.CreateTable) {
		c.Name, c.PartitionKeys, c.Properties = "shops", []string{"shop", "day"}, map[string]string{tableprop.PartitionDynamicCreate: "false"}
	})))
	with := func(c *pb.CreatePartition, edit func(c *pb.CreatePartition)) *pb.CreatePartition {
		edit(c)
		return c
	}
	tests := []struct {
		name string
		c    *pb.CreatePartition
		code pb.ErrorCode
		want []string
	}{
		{"unknown database", &pb.CreatePartition{Database: "nope", Table: "daily", Values: []string{"x"}},
			pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE, []string{`"nope"`}},
		{"unknown table", partitionOf("nope", "x"), pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, []string{`"sales.nope"`}},
		{"unpartitioned table", partitionOf("orders", "x"), invalid, []string{`"sales.orders" is not partitioned`}},
		{"table dropped and created again", with(partitionOf("daily", "2026-12-04"), func(c *pb.CreatePartition) { c.TableId = stale }),
			fenced, []string{`"sales.daily"`, fmt.Sprintf("not %d", stale), "dropped and created again"}},
		{"table dropped and created again, if not exists", with(partitionOf("daily", "2026-12-03"), func(c *pb.CreatePartition) {
			c.TableId, c.IfNotExists = stale, true
		}), fenced, []string{"dropped and created again"}},
		{"exists", partitionOf("daily", "2026-12-03"), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, []string{"dt=2026-12-03", "already exists"}},
		{"not an integer", partitionOf("shops", "abc", "2026-12-03"), invalid, []string{`"sales.shops"`, `"abc" of shop is not an integer`}},
		{"not a date", partitionOf("shops", "1", "2026-13-01"), invalid, []string{`"sales.shops"`, `"2026-13-01" of day is not a date`}},
		{"slash in a value", partitionOf("daily", "a/b"), invalid, []string{`"sales.daily"`, `"a/b" of dt holds one of / = ,`}},
		{"empty value", partitionOf("daily", ""), invalid, []string{`"sales.daily"`, "empty partition value of dt"}},
		{"control character", partitionOf("daily", "a\nb"), invalid, []string{"control character"}},
		{"too few values", partitionOf("shops", "1"), invalid, []string{"1 partition values for 2 partition columns (shop, day)"}},
		{"no values", partitionOf("daily"), invalid, []string{"0 partition values for 1 partition columns (dt)"}},
		{"on write, dynamic-create=false", with(partitionOf("shops", "1", "2026-12-03"), func(c *pb.CreatePartition) {
			c.Origin = pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE
		}), pb.ErrorCode_ERROR_CODE_UNKNOWN_PARTITION, []string{"partition shop=1/day=2026-12-03", "does not exist"}},
		{"fewer live tablet nodes than the replication", with(partitionOf("daily", "2026-12-04"), func(c *pb.CreatePartition) {
			c.LiveNodes = []uint32{2, 9}
		}), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, []string{`"sales.daily" has replication 2; 1 tablet node available`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := rawDump(t, h.s)
			res := h.apply(createPartition(tc.c))
			wantRefused(t, res, tc.code, tc.want...)
			if res.GetValue() != nil || res.GetUnchanged() {
				t.Errorf("refusal carries a value: %v", res)
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if u := h.feedAt(h.index); u != nil {
				t.Errorf("feed at %d: %v", h.index, u)
			}
		})
	}
}

// TestCreatePartitionNeedsTabletNodes: a partition's replicas go on tablet
// nodes that are not being decommissioned, as many as the replication.
func TestCreatePartitionNeedsTabletNodes(t *testing.T) {
	h := ddlFixture(t)
	h.ok(createTable(dailyTable(func(c *pb.CreateTable) { c.Replication = 3 })))
	h.ok(decommission(3))
	before := rawDump(t, h.s)
	wantRefused(t, h.apply(createPartition(partitionOf("daily", "2026-12-03"))), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS,
		`"sales.daily" has replication 3; 2 tablet nodes available`)
	if after := rawDump(t, h.s); after != before {
		t.Errorf("state changed")
	}
}

// TestMaxPartitions: a table holds at most MaxPartitions partitions.
func TestMaxPartitions(t *testing.T) {
	h := ddlFixture(t)
	tbl := h.ok(createTable(dailyTable(nil))).GetTable()
	err := h.s.db.Update(func(tx *bolt.Tx) error { // MaxPartitions creates cost too long
		for i := range MaxPartitions {
			p := &pb.PartitionRecord{Id: 1000 + uint64(i), TableId: tbl.GetId(), Values: []string{fmt.Sprint(i)}, Name: fmt.Sprint("dt=", i)}
			if err := putRecord(tx.Bucket(bucketPartitions), partitionKey(p.GetTableId(), p.GetName()), p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, h.apply(createPartition(partitionOf("daily", "one-more"))), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
		`"sales.daily" has 10000 partitions`, "MaxPartitions")
	h.ok(dropPartition(partitionDrop("daily", "0")))
	h.ok(createPartition(partitionOf("daily", "one-more")))
}

// TestDropPartition: a dropped partition's buckets leave the state and the
// bucket index, so the next placement counts them no more.
func TestDropPartition(t *testing.T) {
	h := ddlFixture(t)
	tbl := h.ok(createTable(dailyTable(nil))).GetTable()
	first := h.ok(createPartition(partitionOf("daily", "2026-12-03"))).GetPartition()
	placed := h.physicalBuckets(first.GetId())

	res := h.ok(dropPartition(partitionDrop("daily", "2026-12-03")))
	if !proto.Equal(res.GetPartition(), first) || res.GetUnchanged() {
		t.Fatalf("dropped %v, want %v", res, first)
	}
	u := h.feedAt(h.index)
	if !slices.Equal(u.GetDroppedPartitions(), []uint64{first.GetId()}) ||
		len(u.GetPartitions())+len(u.GetBuckets())+len(u.GetTables())+len(u.GetDroppedTables()) != 0 {
		t.Errorf("feed at %d: %v", h.index, u)
	}
	if got := h.partitions(tbl.GetId()); len(got) != 0 {
		t.Errorf("partitions after the drop: %v", got)
	}
	h.read(func(v *View) error {
		if p, err := v.Partition(tbl.GetId(), first.GetName()); p != nil || err != nil {
			t.Errorf("Partition after the drop: %v, %v", p, err)
		}
		return nil
	})
	if got := h.physicalBuckets(first.GetId()); len(got) != 0 {
		t.Errorf("buckets after the drop: %v", got)
	}
	if got := bucketsKeyedBy(h.image().GetBuckets(), first.GetId()); len(got) != 0 {
		t.Errorf("image buckets after the drop: %v", got)
	}
	_, err := h.s.Bucket(first.GetId(), 0)
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE)

	// The load is as before the first: the same partition again is a new
	// one, placed as the first was.
	again := h.ok(createPartition(partitionOf("daily", "2026-12-03"))).GetPartition()
	if again.GetId() <= first.GetId() || again.GetName() != first.GetName() {
		t.Errorf("created again: %v, first %v", again, first)
	}
	for i, b := range h.physicalBuckets(again.GetId()) {
		if !slices.Equal(b.GetReplicas(), placed[i].GetReplicas()) {
			t.Errorf("bucket %d on %v, the first was on %v", i, b.GetReplicas(), placed[i].GetReplicas())
		}
	}
}

func TestDropPartitionRefusals(t *testing.T) {
	h := ddlFixture(t)
	tbl := h.ok(createTable(dailyTable(nil))).GetTable()
	stale := h.ok(createPartition(partitionOf("daily", "2026-12-03"))).GetPartition().GetId()
	h.ok(dropPartition(partitionDrop("daily", "2026-12-03")))
	current := h.ok(createPartition(partitionOf("daily", "2026-12-03"))).GetPartition().GetId()
	with := func(c *pb.DropPartition, edit func(c *pb.DropPartition)) *pb.DropPartition {
		edit(c)
		return c
	}
	ifExists := func(c *pb.DropPartition) { c.IfExists = true }
	tests := []struct {
		name string
		c    *pb.DropPartition
		code pb.ErrorCode // 0: unchanged
		want []string
	}{
		{"missing", partitionDrop("daily", "2026-12-05"), pb.ErrorCode_ERROR_CODE_UNKNOWN_PARTITION,
			[]string{"partition dt=2026-12-05", `"sales.daily"`, "does not exist"}},
		{"missing, if exists", with(partitionDrop("daily", "2026-12-05"), ifExists), 0, nil},
		{"partition dropped and created again", with(partitionDrop("daily", "2026-12-03"), func(c *pb.DropPartition) { c.PartitionId = stale }),
			pb.ErrorCode_ERROR_CODE_FENCED, []string{"partition dt=2026-12-03", fmt.Sprintf("has id %d, not %d", current, stale)}},
		{"partition dropped and created again, if exists", with(partitionDrop("daily", "2026-12-03"), func(c *pb.DropPartition) {
			c.PartitionId, c.IfExists = stale, true
		}), 0, nil},
		{"table dropped and created again", with(partitionDrop("daily", "2026-12-03"), func(c *pb.DropPartition) { c.TableId = tbl.GetId() + 100 }),
			pb.ErrorCode_ERROR_CODE_FENCED, []string{"dropped and created again"}},
		{"unknown table", partitionDrop("nope", "x"), pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, []string{`"sales.nope"`}},
		{"unknown table, if exists", with(partitionDrop("nope", "x"), ifExists), 0, nil},
		{"unknown database, if exists", &pb.DropPartition{Database: "nope", Table: "daily", Values: []string{"x"}, IfExists: true}, 0, nil},
		{"unpartitioned table", partitionDrop("orders", "x"), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, []string{`"sales.orders" is not partitioned`}},
		{"bad value", with(partitionDrop("daily", "a=b"), ifExists), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, []string{`"a=b" of dt`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := rawDump(t, h.s)
			res := h.apply(dropPartition(tc.c))
			if tc.code == 0 {
				if err := ResultError(res); err != nil || !res.GetUnchanged() || res.GetValue() != nil {
					t.Errorf("result %v (%v), want unchanged", res, err)
				}
			} else {
				wantRefused(t, res, tc.code, tc.want...)
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if u := h.feedAt(h.index); u != nil {
				t.Errorf("feed at %d: %v", h.index, u)
			}
		})
	}
	if got := partitionIDs(h.partitions(tbl.GetId())); !slices.Equal(got, []uint64{current}) {
		t.Errorf("partitions %v, want %d", got, current)
	}
}

// TestDropPartitionedTable: dropping a partitioned table, alone or with its
// database, drops every partition and its buckets, and the feed lists
// them so the replicas delete their data.
func TestDropPartitionedTable(t *testing.T) {
	tests := []struct {
		name string
		cmd  *pb.Command
		gone []string // tables
	}{
		{"drop table", dropTable("sales", "daily", false), []string{"daily"}},
		{"drop database cascade", dropDB("sales", true, false), []string{"daily", "hourly", "orders"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ddlFixture(t)
			tables := map[string]*pb.TableRecord{"orders": h.table("orders")}
			byTable := map[string][]uint64{}
			for _, name := range []string{"daily", "hourly"} {
				tables[name] = h.ok(createTable(dailyTable(func(c *pb.CreateTable) { c.Name = name }))).GetTable()
				for _, v := range []string{"2026-12-04", "2026-12-03"} {
					byTable[name] = append(byTable[name], h.ok(createPartition(partitionOf(name, v))).GetPartition().GetId())
				}
			}
			h.ok(tc.cmd)

			var droppedTables, droppedPartitions, gone []uint64
			for _, name := range tc.gone {
				droppedTables = append(droppedTables, tables[name].GetId())
				droppedPartitions = append(droppedPartitions, byTable[name]...)
				gone = append(gone, tables[name].GetId())
				gone = append(gone, byTable[name]...)
			}
			u := h.feedAt(h.index)
			if !slices.Equal(sortedIDs(u.GetDroppedTables()), sortedIDs(droppedTables)) ||
				!slices.Equal(sortedIDs(u.GetDroppedPartitions()), sortedIDs(droppedPartitions)) {
				t.Errorf("feed at %d drops tables %v and partitions %v; want %v and %v",
					h.index, u.GetDroppedTables(), u.GetDroppedPartitions(), droppedTables, droppedPartitions)
			}
			img := h.image()
			for _, id := range gone {
				if got := bucketsKeyedBy(img.GetBuckets(), id); len(got) != 0 {
					t.Errorf("buckets of %d left: %v", id, got)
				}
				if got := h.partitions(id); len(got) != 0 {
					t.Errorf("partitions of %d left: %v", id, got)
				}
			}
			var kept []uint64
			for _, p := range img.GetPartitions() {
				kept = append(kept, p.GetId())
				if slices.Contains(gone, p.GetTableId()) {
					t.Errorf("partition %v of a dropped table left", p)
				}
			}
			if tc.name == "drop table" {
				if !slices.Equal(sortedIDs(kept), sortedIDs(byTable["hourly"])) || len(img.GetBuckets()) != 3+2*2 {
					t.Errorf("kept partitions %v and %d buckets; want hourly's %v and 7", kept, len(img.GetBuckets()), byTable["hourly"])
				}
			} else if len(kept)+len(img.GetBuckets()) != 0 {
				t.Errorf("kept partitions %v and %d buckets", kept, len(img.GetBuckets()))
			}
		})
	}
}

// TestPartitionReads: the image lists every partition to every watcher,
// and the buckets a watcher holds; TablesByID resolves a partition's id,
// the one its buckets are keyed by, to its table.
func TestPartitionReads(t *testing.T) {
	h := ddlFixture(t)
	daily := h.ok(createTable(dailyTable(nil))).GetTable()
	shops := h.ok(createTable(dailyTable(func(c *pb.CreateTable) { c.Name, c.PartitionKeys = "shops", []string{"shop"} }))).GetTable()
	created := map[uint64]*pb.PartitionRecord{}
	for _, c := range []*pb.CreatePartition{partitionOf("daily", "2026-12-04"), partitionOf("shops", "9"),
		partitionOf("daily", "2026-12-03"), partitionOf("shops", "10")} {
		p := h.ok(createPartition(c)).GetPartition()
		created[p.GetId()] = p
	}
	if got := names(h.partitions(daily.GetId())); !slices.Equal(got, []string{"dt=2026-12-03", "dt=2026-12-04"}) {
		t.Errorf("daily's partitions %v", got)
	}
	if got := names(h.partitions(shops.GetId())); !slices.Equal(got, []string{"shop=10", "shop=9"}) {
		t.Errorf("shops' partitions %v (by name, as text)", got)
	}

	img := h.image()
	wantPartitions := append(h.partitions(daily.GetId()), h.partitions(shops.GetId())...)
	if !equalRecords(img.GetPartitions(), wantPartitions) {
		t.Errorf("image partitions %v, want %v", img.GetPartitions(), wantPartitions)
	}
	for id := range created {
		if got := bucketsKeyedBy(img.GetBuckets(), id); !equalRecords(got, h.physicalBuckets(id)) || len(got) != 2 {
			t.Errorf("image buckets of partition %d: %v", id, got)
		}
	}
	for node := uint32(1); node <= 3; node++ {
		nodeImg, err := h.s.ImageFor(node)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(img.GetBuckets()), func(b *pb.BucketRecord) bool { return !replicaOf(b, node) })
		if !equalRecords(nodeImg.GetPartitions(), img.GetPartitions()) || !equalRecords(nodeImg.GetBuckets(), want) {
			t.Errorf("ImageFor(%d): partitions %v, buckets %v", node, names(nodeImg.GetPartitions()), nodeImg.GetBuckets())
		}
	}

	h.read(func(v *View) error {
		byID, err := v.TablesByID()
		if err != nil {
			return err
		}
		if len(byID) != 3+len(created) {
			t.Errorf("TablesByID has %d ids, want 3 tables and %d partitions", len(byID), len(created))
		}
		for id, p := range created {
			want := daily
			if p.GetTableId() == shops.GetId() {
				want = shops
			}
			if !proto.Equal(byID[id], want) {
				t.Errorf("TablesByID[%d] = %v, want %s", id, byID[id].GetName(), want.GetName())
			}
			got, err := v.Partition(p.GetTableId(), p.GetName())
			if err != nil || !proto.Equal(got, p) {
				t.Errorf("Partition(%d, %s) = %v, %v", p.GetTableId(), p.GetName(), got, err)
			}
		}
		if !proto.Equal(byID[daily.GetId()], daily) || !proto.Equal(byID[shops.GetId()], shops) {
			t.Errorf("TablesByID of the tables themselves")
		}
		for _, miss := range []struct {
			table uint64
			name  string
		}{{daily.GetId(), "dt=2026-12-05"}, {shops.GetId(), "dt=2026-12-03"}, {daily.GetId(), "shop=9"}} {
			if p, err := v.Partition(miss.table, miss.name); p != nil || err != nil {
				t.Errorf("Partition(%d, %s) = %v, %v; want none", miss.table, miss.name, p, err)
			}
		}
		return nil
	})
}

// TestPartitionsReplayAndRestore: replicas applying the same log hold the
// same file; a snapshot keeps the partitions, and a restored state goes on
// as the original.
func TestPartitionsReplayAndRestore(t *testing.T) {
	run := func(h *harness) {
		h.ok(initCluster("c1"))
		h.tabletNodes(3)
		h.ok(createDB("sales"))
		h.ok(createTable(dailyTable(nil)))
		for _, v := range []string{"2026-12-01", "2026-12-02", "2026-12-03"} {
			h.ok(createPartition(partitionOf("daily", v)))
		}
		h.ok(dropPartition(partitionDrop("daily", "2026-12-01")))
		h.apply(createPartition(partitionOf("daily", "2026-12-02"))) // refused: exists
		c := partitionOf("daily", "2026-12-02")
		c.IfNotExists = true
		h.ok(createPartition(c))
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
	if fullDump(t, c.s) != fullDump(t, a.s) {
		t.Fatal("a restored snapshot differs")
	}
	if img := c.image(); !proto.Equal(img, a.image()) || len(img.GetPartitions()) != 2 {
		t.Fatalf("restored image %v", img)
	}
	// Both go on alike, the restored one with a bucket index built from
	// the file.
	c.index, c.nowMs = a.index, a.nowMs
	for _, h := range []*harness{a, c} {
		h.ok(createPartition(partitionOf("daily", "2026-12-04")))
		h.ok(dropPartition(partitionDrop("daily", "2026-12-02")))
		h.ok(createTable(dailyTable(func(c *pb.CreateTable) { c.Name = "hourly" })))
		h.ok(createPartition(partitionOf("hourly", "2026-12-04T17")))
		h.ok(dropTable("sales", "daily", false))
	}
	if fullDump(t, c.s) != fullDump(t, a.s) {
		t.Fatal("the restored state went on differently")
	}
	if img := c.image(); len(img.GetPartitions()) != 1 || img.GetPartitions()[0].GetName() != "dt=2026-12-04T17" {
		t.Fatalf("partitions at the end: %v", img.GetPartitions())
	}
}
