package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// specDifferences lists how an existing table differs from what a
// `table create --if-not-exists` asked for, so that the user learns that
// the table they got is not the one they described. Only what the request
// set is compared (0 buckets asks for the default, so it matches any).
func specDifferences(spec client.TableSpec, t *client.TableInfo) []string {
	var out []string
	if s, err := record.ParseSchema(spec.Schema); err == nil {
		want := make([]string, len(s.Columns))
		for i, c := range s.Columns {
			want[i] = columnText(c.Name, c.Type.String(), c.Nullable)
		}
		have := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			have[i] = columnText(c.Name, c.Type, c.Nullable)
		}
		if !slices.Equal(want, have) {
			out = append(out, fmt.Sprintf("schema (%s), requested (%s)", strings.Join(have, ", "), strings.Join(want, ", ")))
		}
		pk := spec.PrimaryKey
		if len(pk) == 0 {
			pk = s.PrimaryKey
		}
		if !slices.Equal(pk, t.PrimaryKey) {
			out = append(out, fmt.Sprintf("primary key (%s), requested (%s)", strings.Join(t.PrimaryKey, ", "), strings.Join(pk, ", ")))
		}
	}
	if len(spec.BucketKey) > 0 && !slices.Equal(spec.BucketKey, t.BucketKey) {
		out = append(out, fmt.Sprintf("bucket key (%s), requested (%s)", strings.Join(t.BucketKey, ", "), strings.Join(spec.BucketKey, ", ")))
	}
	if spec.Buckets > 0 && spec.Buckets != t.Buckets {
		out = append(out, fmt.Sprintf("%s, requested %d", plural(int64(t.Buckets), "bucket"), spec.Buckets))
	}
	if spec.Replication > 0 && spec.Replication != t.Replication {
		out = append(out, fmt.Sprintf("replication %d, requested %d", t.Replication, spec.Replication))
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Properties)) {
		if have, ok := t.Properties[k]; !ok || have != spec.Properties[k] {
			out = append(out, fmt.Sprintf("property %s=%q, requested %q", k, have, spec.Properties[k]))
		}
	}
	return out
}

func columnText(name, typ string, nullable bool) string {
	if nullable {
		return name + " " + typ
	}
	return name + " " + typ + " NOT NULL"
}
