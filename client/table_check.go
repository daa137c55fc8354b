package client

import (
	"fmt"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// unusableReason says why a tablet node cannot use a table's stored
// metadata, by the same rules the replicas read it with (record.ParseType
// for the column types, tableprop.Parse for the properties); "" when it
// can. Tables stored before create checked everything can fail here.
func unusableReason(t *pb.TableRecord) string {
	if len(t.GetSchemas()) == 0 {
		return "the table has no schema"
	}
	for _, c := range t.GetSchemas()[len(t.GetSchemas())-1].GetColumns() {
		if _, err := record.ParseType(c.GetType()); err != nil {
			return fmt.Sprintf("column %q: %v", c.GetName(), err)
		}
	}
	_, err := tableprop.Parse(t.GetProperties(), tableprop.Table{Replication: int(t.GetReplication()), PrimaryKey: len(t.GetPrimaryKey()) > 0})
	if err != nil {
		return err.Error()
	}
	return ""
}
