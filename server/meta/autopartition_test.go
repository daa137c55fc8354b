package meta

import (
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// autoTable is a table partitioned by dt with auto-partitioning props.
func autoTable(props map[string]string) *pb.TableRecord {
	return &pb.TableRecord{Id: 1, Database: "d", Name: "t", Replication: 1, Checks: 5, PartitionKeys: []string{"dt"},
		Schemas:    []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "dt", Type: "STRING"}, {Name: "v", Type: "BIGINT", Nullable: true}}}},
		Properties: props}
}

func parts(values ...string) []*pb.PartitionRecord {
	out := make([]*pb.PartitionRecord, len(values))
	for i, v := range values {
		out[i] = &pb.PartitionRecord{Id: uint64(100 + i), TableId: 1, Values: []string{v}, Name: "dt=" + v}
	}
	return out
}

func planned(t *testing.T, tbl *pb.TableRecord, have []*pb.PartitionRecord, now time.Time) (create, drop []string) {
	t.Helper()
	plan, err := planAutoPartitions(tbl, have, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range plan.create {
		create = append(create, v[0])
	}
	for _, p := range plan.drop {
		drop = append(drop, p.GetValues()[0])
	}
	return create, drop
}

// TestPlanAutoPartitions: the current period and those after it up to
// num-precreate are created when missing; periods more than num-retention
// before the current one are dropped; values of another form are left
// alone; the plan is a function of the state and the time only.
func TestPlanAutoPartitions(t *testing.T) {
	now := time.Date(2026, 12, 3, 17, 30, 0, 0, time.UTC)
	day := autoTable(map[string]string{"auto-partition.time-unit": "day"})
	have := parts("2026-11-24", "2026-11-25", "2026-11-26", "2026-11-27", "2026-12-02", "2026-12-03", "manual", "2026-12-3")
	create, drop := planned(t, day, have, now)
	if !slices.Equal(create, []string{"2026-12-04"}) {
		t.Fatalf("day, precreate 2 by default: create %v", create)
	}
	// Retention 7 keeps 2026-11-26 to 2026-12-02 before today.
	if !slices.Equal(drop, []string{"2026-11-24", "2026-11-25"}) {
		t.Fatalf("day, retention 7 by default: drop %v", drop)
	}

	hour := autoTable(map[string]string{"auto-partition.time-unit": "HOUR", "auto-partition.num-precreate": "3",
		"auto-partition.num-retention": "1", "auto-partition.time-zone": "Asia/Kolkata"})
	// 17:30 UTC is 23:00 in Kolkata (UTC+5:30).
	create, drop = planned(t, hour, parts("2026-12-03T21", "2026-12-03T22", "2026-12-03T23"), now)
	if !slices.Equal(create, []string{"2026-12-04T00", "2026-12-04T01"}) || !slices.Equal(drop, []string{"2026-12-03T21"}) {
		t.Fatalf("hour in Asia/Kolkata: create %v, drop %v", create, drop)
	}

	keepAll := autoTable(map[string]string{"auto-partition.time-unit": "month", "auto-partition.num-retention": "0",
		"auto-partition.num-precreate": "0"})
	if create, drop = planned(t, keepAll, parts("1999-01"), now); len(create)+len(drop) != 0 {
		t.Fatalf("precreate 0, retention 0: create %v, drop %v", create, drop)
	}

	if create, drop = planned(t, autoTable(nil), parts("2000-01-01"), now); len(create)+len(drop) != 0 {
		t.Fatalf("no auto-partitioning: create %v, drop %v", create, drop)
	}
	// Asked again with what the first round made, the plan is empty.
	create, _ = planned(t, day, append(have, parts("2026-12-04")...), now)
	if len(create) != 0 {
		t.Fatalf("second round creates %v", create)
	}
}
