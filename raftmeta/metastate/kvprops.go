package metastate

import (
	"slices"
	"strings"

	"github.com/floedb/floe/transport/pb"
)

// Properties of primary-key tables (server/replica reads them).
const (
	propMergeEngine    = "merge-engine"
	propVersionColumn  = "merge-engine.version-column"
	propChangelogImage = "changelog.image"
	propDeleteBehavior = "delete.behavior"
)

// validateKVProperties checks the primary-key table properties of a new
// table: known values, and a version column of an orderable type.
func validateKVProperties(table string, c *pb.CreateTable) error {
	props := c.GetProperties()
	pk := len(c.GetPrimaryKey()) > 0
	for _, k := range []string{propMergeEngine, propVersionColumn, propChangelogImage, propDeleteBehavior} {
		if _, ok := props[k]; ok && !pk {
			return errorf(codeInvalidRequest, "table %q: property %q applies to primary-key tables only", table, k)
		}
	}
	oneOf := func(key string, values ...string) error {
		v, ok := props[key]
		if ok && !slices.Contains(values, strings.ToLower(v)) {
			return errorf(codeInvalidRequest, "table %q: %s=%.64q; want one of %s", table, key, v, strings.Join(values, ", "))
		}
		return nil
	}
	if err := oneOf(propMergeEngine, "last_row", "first_row", "versioned"); err != nil {
		return err
	}
	if err := oneOf(propChangelogImage, "full", "wal"); err != nil {
		return err
	}
	if err := oneOf(propDeleteBehavior, "allow", "ignore", "disable"); err != nil {
		return err
	}
	versioned := strings.EqualFold(props[propMergeEngine], "versioned")
	col, hasCol := props[propVersionColumn]
	switch {
	case versioned && !hasCol:
		return errorf(codeInvalidRequest, "table %q: merge-engine=versioned needs %s", table, propVersionColumn)
	case hasCol && !versioned:
		return errorf(codeInvalidRequest, "table %q: %s is only for merge-engine=versioned", table, propVersionColumn)
	case !versioned:
		return nil
	}
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
