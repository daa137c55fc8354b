package metastate

import (
	"slices"
	"strings"

	"github.com/floedb/floe/transport/pb"
)

// The create-table checks of version 0 (pb.CreateTable.Checks unset): those
// of the builds before the property registry. Commands they committed are
// applied by them still, so that a log replayed after an upgrade gives the
// state it gave before. Do not change them.

// validatePropertiesV0 checks property sizes only, and the properties of
// primary-key tables.
func validatePropertiesV0(table string, c *pb.CreateTable) error {
	props := c.GetProperties()
	if len(props) > MaxProperties {
		return errorf(codeInvalidRequest, "table %q has %d properties; at most %d", table, len(props), MaxProperties)
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key is the same on every replica
	for _, k := range keys {
		switch {
		case k == "":
			return errorf(codeInvalidRequest, "table %q: property with an empty key", table)
		case len(k) > MaxPropertyKeyBytes:
			return errorf(codeInvalidRequest, "table %q: property key %.64q... is %d bytes; at most %d",
				table, k, len(k), MaxPropertyKeyBytes)
		case len(props[k]) > MaxPropertyValueBytes:
			return errorf(codeInvalidRequest, "table %q: property %q value is %d bytes; at most %d",
				table, k, len(props[k]), MaxPropertyValueBytes)
		}
	}
	return validateKVPropertiesV0(table, c)
}

// validateKVPropertiesV0 checks the primary-key table properties of a new
// table: known values, and a version column of an orderable type.
func validateKVPropertiesV0(table string, c *pb.CreateTable) error {
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

// The primary-key table properties version 0 knew.
const (
	propMergeEngine    = "merge-engine"
	propVersionColumn  = "merge-engine.version-column"
	propChangelogImage = "changelog.image"
	propDeleteBehavior = "delete.behavior"
)
