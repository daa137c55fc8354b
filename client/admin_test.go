package client

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

func TestBucketStatus(t *testing.T) {
	tests := []struct {
		b    *pb.BucketRecord
		want string
	}{
		{&pb.BucketRecord{Leader: 2, Isr: []uint32{2, 3}}, BucketOnline},
		{&pb.BucketRecord{Leader: 0, Isr: []uint32{2}}, BucketOffline},
		{&pb.BucketRecord{Leader: 0}, BucketNoInSyncReplica},
	}
	for _, tc := range tests {
		info := tableFromPB(&pb.TableRecord{Name: "t"}, []*pb.BucketRecord{tc.b})
		if got := info.Placement[0].Status; got != tc.want {
			t.Errorf("%v: status %q, want %q", tc.b, got, tc.want)
		}
	}
}

// TestAdminAlterTable: AlterTable sets and resets properties, adds
// columns as new schema versions and sets the comment, returning the
// table after it; an ALTER that changes nothing reports Unchanged; one
// against a schema version that changed since is fenced; an immutable
// property (with its reason), a NOT NULL column and an unknown property
// are refused and change nothing.
func TestAdminAlterTable(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	db, name := tbl.Info().Database, tbl.Info().Name
	ctx := guardCtx(t)
	admin := c.Admin()
	comment := "scores by id"
	info, err := admin.AlterTable(ctx, db, name, AlterTable{Set: map[string]string{"log.ttl": "3d"}, Comment: &comment,
		AddColumns: []record.Column{{Name: "note", Type: record.String(), Nullable: true}}})
	if err != nil {
		t.Fatal(err)
	}
	first := tbl.Info().SchemaID
	if info.Properties["log.ttl"] != "3d" || info.Comment != comment || info.SchemaID != first+1 ||
		!slices.Equal(info.SchemaVersions, []int32{first, first + 1}) || info.Columns[len(info.Columns)-1].Name != "note" {
		t.Fatalf("after the ALTER: %+v", info)
	}
	var unchanged bool
	if _, err := admin.AlterTable(ctx, db, name, AlterTable{Set: map[string]string{"log.ttl": "3d"}}, Unchanged(&unchanged)); err != nil || !unchanged {
		t.Fatalf("the same ALTER again: unchanged %v, %v", unchanged, err)
	}
	if info, err = admin.AlterTable(ctx, db, name, AlterTable{Reset: []string{"log.ttl"}}); err != nil {
		t.Fatal(err)
	}
	if _, set := info.Properties["log.ttl"]; set {
		t.Fatalf("log.ttl after its reset: %q", info.Properties["log.ttl"])
	}
	tests := []struct {
		name  string
		alter AlterTable
		want  error
		says  []string
	}{
		{"stale schema version", AlterTable{ExpectedSchemaID: first, AddColumns: []record.Column{{Name: "x", Type: record.Int(), Nullable: true}}},
			transport.ErrFenced, nil},
		{"immutable", AlterTable{Set: map[string]string{"merge-engine": "first_row"}},
			transport.ErrInvalidRequest, []string{`"merge-engine" is immutable`, "merged"}},
		{"NOT NULL column", AlterTable{AddColumns: []record.Column{{Name: "x", Type: record.Int()}}},
			transport.ErrInvalidRequest, []string{"NOT NULL"}},
		{"unknown property", AlterTable{Set: map[string]string{"log.tll": "1d"}},
			transport.ErrInvalidRequest, []string{`"log.tll"`, "unknown property"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admin.AlterTable(ctx, db, name, tc.alter)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q lacks %q", err, s)
				}
			}
		})
	}
	after, err := admin.DescribeTable(ctx, db, name)
	if err != nil || after.SchemaID != first+1 || after.Comment != comment {
		t.Fatalf("the refused ALTERs changed the table: %+v, %v", after, err)
	}
}
