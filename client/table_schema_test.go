package client

import (
	"testing"

	"github.com/floedb/floe/transport/pb"
)

// TestSchemaOfStoredCaseTwins checks the SDK opens a table stored with
// column names that differ only in case (accepted by builds before they
// were refused at create).
func TestSchemaOfStoredCaseTwins(t *testing.T) {
	rec := &pb.TableRecord{Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{
		{Name: "id", Type: "INT"}, {Name: "ID", Type: "BIGINT", Nullable: true}}}}, PrimaryKey: []string{"id"}}
	s, id, err := schemaOf(rec)
	if err != nil || id != 1 || len(s.Columns) != 2 {
		t.Fatalf("schemaOf: %+v %d %v", s, id, err)
	}
}
