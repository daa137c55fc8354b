package tableprop

import (
	"fmt"
	"strconv"
)

// parseValue reads one of the properties that are neither the merge
// properties nor min.insync.replicas into v.
func parseValue(v *Values, k, val string, t Table) error {
	switch k {
	case LogFormat, LogCompression, LogCompressionLevel:
		return parseLogFormat(v, k, val, t)
	case AutoPartitionTimeUnit, AutoPartitionNumPrecreate, AutoPartitionNumRetention, AutoPartitionTimeZone, PartitionDynamicCreate:
		return parsePartitioning(v, k, val)
	case DataLakeEnabled, DataLakeFormat, DataLakeFreshness, DataLakeRetention:
		return parseDataLake(v, k, val)
	}
	return parseTiering(v, k, val)
}

// parseLogFormat reads log.format, log.compression or
// log.compression.level into v. The enumerated values arrive lower-cased.
func parseLogFormat(v *Values, k, val string, t Table) error {
	switch k {
	case LogFormat:
		if t.PrimaryKey && val != FormatRow {
			return &Error{Property: k, Value: val,
				Problem: "primary-key tables are row only: their changelogs, which the KV replicas replay, stay row-based"}
		}
		v.LogFormat = val
	case LogCompression:
		v.LogCompression = val
	case LogCompressionLevel:
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > maxZstdLevel {
			return &Error{Property: k, Value: val, Problem: fmt.Sprintf("want a zstd level from 1 to %d", maxZstdLevel)}
		}
		v.LogCompressionLevel = n
	}
	return nil
}
