package client

import (
	"strings"
	"testing"

	"github.com/floedb/floe/transport/pb"
)

// TestCheckStored: DescribeTable says why nodes cannot use a table's
// stored metadata, by the rules the replicas read it with, or what create
// would refuse in a table they serve.
func TestCheckStored(t *testing.T) {
	cols := []*pb.Column{{Name: "id", Type: "BIGINT"}, {Name: "v", Type: "STRING", Nullable: true}}
	tests := []struct {
		name    string
		rec     *pb.TableRecord
		wants   string // a substring of Unusable; "" wants none
		invalid string // a substring of Invalid; "" wants none
	}{
		{"usable", &pb.TableRecord{Replication: 3, Properties: map[string]string{"min.insync.replicas": "3"}}, "", ""},
		{"min.insync.replicas not a number", &pb.TableRecord{Replication: 3, Properties: map[string]string{"min.insync.replicas": "abc"}}, `min.insync.replicas="abc"`, ""},
		{"min.insync.replicas over replication", &pb.TableRecord{Replication: 1, Properties: map[string]string{"min.insync.replicas": "5"}}, "", "replication factor 1"},
		{"typo", &pb.TableRecord{Replication: 1, PrimaryKey: []string{"id"}, Properties: map[string]string{"merge-engne": "first_row"}}, "", "unknown property"},
		{"bad merge engine", &pb.TableRecord{Replication: 1, PrimaryKey: []string{"id"}, Properties: map[string]string{"merge-engine": "newest"}}, "want one of", ""},
		{"unknown type", &pb.TableRecord{Replication: 1, Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "x", Type: "NUMBER"}}}}}, `column "x"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rec.Schemas == nil {
				tt.rec.Schemas = []*pb.SchemaVersion{{Id: 1, Columns: cols}}
			}
			info := tableFromPB(tt.rec, nil)
			if (tt.wants == "") != (info.Unusable == "") || !strings.Contains(info.Unusable, tt.wants) {
				t.Fatalf("Unusable = %q, want %q", info.Unusable, tt.wants)
			}
			if (tt.invalid == "") != (info.Invalid == "") || !strings.Contains(info.Invalid, tt.invalid) {
				t.Fatalf("Invalid = %q, want %q", info.Invalid, tt.invalid)
			}
		})
	}
}
