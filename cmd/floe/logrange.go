package main

import (
	"fmt"
	"strconv"

	"github.com/floedb/floe/client"
)

// parseBuckets reads a --buckets list of bucket numbers; "" is nil (all).
func parseBuckets(s string) ([]int32, error) {
	var out []int32
	for _, b := range splitList(s) {
		n, err := strconv.ParseInt(b, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: --buckets: %q is not a bucket number", errUsage, b)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// tableBuckets is buckets, checked against the table, or every bucket of the
// table when buckets is nil.
func tableBuckets(tbl *client.Table, buckets []int32) ([]int32, error) {
	if buckets == nil {
		for b := range tbl.Buckets() {
			buckets = append(buckets, b)
		}
		return buckets, nil
	}
	for _, b := range buckets {
		if b >= tbl.Buckets() {
			info := tbl.Info()
			return nil, fmt.Errorf("%w: --buckets: %s.%s has buckets 0 to %d, not %d", errUsage, info.Database, info.Name, tbl.Buckets()-1, b)
		}
	}
	return buckets, nil
}
