package dataio

import (
	"strconv"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// AppendRecordJSON appends a record as one JSON line: the row's columns,
// then, of a partitioned table, _partition, then _bucket, _offset and _timestamp (RFC 3339, milliseconds, UTC), and
// for a changelog _change (+I, -U, +U, -D).
func AppendRecordJSON(dst []byte, codec *record.JSONCodec, r client.ScanRecord, changelog bool) ([]byte, error) {
	return appendLineJSON(dst, codec, r, true, changelog)
}

// AppendNoMetaJSON appends a record as floe consume --no-meta prints it: the
// row's columns, and for a changelog _change, without which a line would
// not say whether its row was written or deleted (piped into produce, a
// delete would write the row back).
func AppendNoMetaJSON(dst []byte, codec *record.JSONCodec, r client.ScanRecord, changelog bool) ([]byte, error) {
	return appendLineJSON(dst, codec, r, false, changelog)
}

// appendLineJSON appends the row's columns, with position its _bucket,
// _offset and _timestamp, with changelog its _change, and a newline.
func appendLineJSON(dst []byte, codec *record.JSONCodec, r client.ScanRecord, position, changelog bool) ([]byte, error) {
	start := len(dst)
	dst, err := codec.AppendJSON(dst, r.Row)
	if err != nil {
		return dst, err
	}
	if !position && !changelog {
		return append(dst, '\n'), nil
	}
	dst = dst[:len(dst)-1] // the closing brace
	sep := func() {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
	}
	if position {
		sep()
		if r.Partition != "" {
			dst = append(dst, `"_partition":`...)
			dst = strconv.AppendQuote(dst, r.Partition)
			dst = append(dst, ',')
		}
		dst = append(dst, `"_bucket":`...)
		dst = strconv.AppendInt(dst, int64(r.Bucket), 10)
		dst = append(dst, `,"_offset":`...)
		dst = strconv.AppendInt(dst, r.Offset, 10)
		dst = append(dst, `,"_timestamp":"`...)
		dst = r.Timestamp.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
		dst = append(dst, '"')
	}
	if changelog {
		sep()
		dst = append(dst, `"_change":"`...)
		dst = append(dst, r.Change.String()...)
		dst = append(dst, '"')
	}
	return append(dst, "}\n"...), nil
}
