package metastate

import (
	"slices"
	"strings"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// validateVersionColumn checks the version column of a versioned
// primary-key table, which the property registry cannot: it must be a
// column of an orderable type.
func validateVersionColumn(table string, c *pb.CreateTable) error {
	props := c.GetProperties()
	if !strings.EqualFold(props[tableprop.MergeEngine], tableprop.MergeVersioned) {
		return nil
	}
	col := props[tableprop.VersionColumn]
	i := slices.IndexFunc(c.GetColumns(), func(cl *pb.Column) bool { return cl.GetName() == col })
	if i < 0 {
		return errorf(codeInvalidRequest, "table %q: version column %.64q is not a column", table, col)
	}
	typ := strings.ToUpper(c.GetColumns()[i].GetType())
	switch {
	case typ == "TINYINT", typ == "SMALLINT", typ == "INT", typ == "BIGINT", strings.HasPrefix(typ, "TIMESTAMP"):
	default:
		return errorf(codeInvalidRequest, "table %q: version column %q has type %s; want an integer or timestamp type", table, col, typ)
	}
	return nil
}
