package kvstore

import (
	"fmt"

	"github.com/floedb/floe/storage/record"
)

// AppendChanges decodes the changelog records of batch b at offsets from
// onwards into Changes appended to dst, keyed by keys (those of the batch's
// schema version), each with the batch's schema id. Control batches and
// UpdateBefore records add nothing. Row and Key of the Changes alias the
// batch (or, for a compressed batch, a buffer of its own): they stay valid
// as long as the batch's bytes do.
func AppendChanges(dst []Change, b record.Batch, codec *record.Codec, keys *Keys, from int64) ([]Change, error) {
	if b.PayloadFormat() == record.PayloadControl || b.NextOffset() <= from {
		return dst, nil
	}
	if b.PayloadFormat() != record.PayloadRows || b.AppendOnly() {
		return dst, fmt.Errorf("%w: batch at offset %d is not a changelog batch", ErrCorrupt, b.BaseOffset())
	}
	it, _, err := b.Records(codec, nil)
	if err != nil {
		return dst, fmt.Errorf("%w: batch at offset %d: %v", ErrCorrupt, b.BaseOffset(), err)
	}
	for it.Next() {
		rec := it.Record()
		if rec.Offset < from || rec.Change == record.UpdateBefore {
			continue
		}
		switch rec.Change {
		case record.Insert, record.UpdateAfter, record.Delete:
		default:
			return dst, fmt.Errorf("%w: record at offset %d is %s, not a changelog record", ErrCorrupt, rec.Offset, rec.Change)
		}
		key, err := keys.RowKey(nil, rec.Data)
		if err != nil {
			return dst, fmt.Errorf("%w: record at offset %d: %v", ErrCorrupt, rec.Offset, err)
		}
		dst = append(dst, Change{Key: key, Row: rec.Data, Kind: rec.Change, SchemaID: b.SchemaID(), Offset: rec.Offset})
	}
	if err := it.Err(); err != nil {
		return dst, fmt.Errorf("%w: batch at offset %d: %v", ErrCorrupt, b.BaseOffset(), err)
	}
	return dst, nil
}
