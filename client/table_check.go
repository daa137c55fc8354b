package client

import (
	"fmt"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// checkStored reads a stored table's definition by the rules the replicas
// read it with (record.ParseType for the column types,
// tableprop.ParseStored for the properties) and by those of table create
// (tableprop.Parse). unusable says why nodes cannot serve the table;
// invalid, for a table they do serve, what create would refuse today (a
// typo an older build kept, a min.insync.replicas above the replication
// factor). Both are "" for a table created by this build.
func checkStored(t *pb.TableRecord) (unusable, invalid string) {
	if len(t.GetSchemas()) == 0 {
		return "the table has no schema", ""
	}
	for _, c := range t.GetSchemas()[len(t.GetSchemas())-1].GetColumns() {
		if _, err := record.ParseType(c.GetType()); err != nil {
			return fmt.Sprintf("column %q: %v", c.GetName(), err), ""
		}
	}
	tbl := tableprop.Table{Replication: int(t.GetReplication()), PrimaryKey: len(t.GetPrimaryKey()) > 0, CreatedChecks: t.GetChecks()}
	if _, err := tableprop.ParseStored(t.GetProperties(), tbl); err != nil {
		return err.Error(), ""
	}
	if _, err := tableprop.Parse(t.GetProperties(), tbl); err != nil {
		return "", err.Error()
	}
	return "", ""
}
