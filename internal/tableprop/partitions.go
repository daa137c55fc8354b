package tableprop

import (
	"fmt"
	"strconv"
	"time"
	// The zone database is in the binary: every metadata replica reads
	// auto-partition.time-unit's zones alike, whatever the machine has.
	_ "time/tzdata"
)

// Defaults of auto-partitioning.
const (
	DefaultAutoPartitionPrecreate = 2
	DefaultAutoPartitionRetention = 7

	maxPrecreate = 1000
	maxRetention = 100_000
)

// parsePartitioning reads a property of partitioned tables into v. The
// enumerated values arrive lower-cased.
func parsePartitioning(v *Values, k, val string) error {
	switch k {
	case AutoPartitionTimeUnit:
		v.AutoPartition = val
	case AutoPartitionNumPrecreate, AutoPartitionNumRetention:
		limit := maxPrecreate
		if k == AutoPartitionNumRetention {
			limit = maxRetention
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > limit {
			return &Error{Property: k, Value: val, Problem: fmt.Sprintf("want an integer from 0 to %d", limit)}
		}
		if k == AutoPartitionNumPrecreate {
			v.AutoPartitionPrecreate = n
		} else {
			v.AutoPartitionRetention = n
		}
	case AutoPartitionTimeZone:
		loc, err := time.LoadLocation(val)
		if err != nil || val == "" || val == "Local" {
			return &Error{Property: k, Value: val, Problem: "want an IANA time zone name such as UTC or Europe/Berlin"}
		}
		v.AutoPartitionZone = loc
	case PartitionDynamicCreate:
		v.DynamicCreate = val == "true"
	}
	return nil
}
