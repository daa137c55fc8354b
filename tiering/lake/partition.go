package lake

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"
)

// partitionString is a partition value as the data path shows it: an
// ISO date for a date, the number or the string otherwise.
func partitionString(v PartitionValue) string {
	switch x := v.Value.(type) {
	case string:
		return x
	case int32:
		if v.Type == "date" {
			return time.Unix(int64(x)*86400, 0).UTC().Format(time.DateOnly)
		}
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return "null"
	}
	return ""
}

// singleValue is a partition value in Iceberg's single-value binary form
// (little-endian integers, UTF-8 strings).
func singleValue(v PartitionValue) []byte {
	switch x := v.Value.(type) {
	case string:
		return []byte(x)
	case int32:
		return binary.LittleEndian.AppendUint32(nil, uint32(x))
	case int64:
		return binary.LittleEndian.AppendUint64(nil, uint64(x))
	}
	return nil
}

// less orders two single values of one partition type.
func less(typ string, a, b []byte) bool {
	switch typ {
	case "int", "date":
		return int32(binary.LittleEndian.Uint32(a)) < int32(binary.LittleEndian.Uint32(b))
	case "long":
		return int64(binary.LittleEndian.Uint64(a)) < int64(binary.LittleEndian.Uint64(b))
	}
	return bytes.Compare(a, b) < 0
}

// summarize is a manifest's partition field summaries over its files:
// whether a value is null, and the least and greatest.
func summarize(types []string, files []DataFile) []FieldSummary {
	out := make([]FieldSummary, len(types))
	for i, typ := range types {
		for _, f := range files {
			if i >= len(f.Partition) || f.Partition[i].Value == nil {
				out[i].ContainsNull = true
				continue
			}
			v := singleValue(f.Partition[i])
			if out[i].Lower == nil || less(typ, v, out[i].Lower) {
				out[i].Lower = v
			}
			if out[i].Upper == nil || less(typ, out[i].Upper, v) {
				out[i].Upper = v
			}
		}
	}
	return out
}
