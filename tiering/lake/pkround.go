package lake

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
)

// A primary-key table's lake holds, per bucket, one data file of the
// bucket's latest row per key as of the lake offset (copy-on-write): a
// round reduces the bucket's changelog past the lake offset to each key's
// latest change, then writes the bucket's file again, its old rows that no
// change touched and the changed keys' new rows (deleted keys left out),
// and commits a snapshot that replaces the old file with the new one
// (StageReplace). Engines read plain data files, with no delete files to
// merge. A row's __offset is its key's latest change.

// pkChange is a key's latest change in a round: its row in the round's
// schema, or none for a deleted key.
type pkChange struct {
	offset, timestampMs int64
	row                 []byte // nil: deleted
}

// pkChanges reduces a bucket's changelog to each key's latest change.
type pkChanges struct {
	keys    *record.KeyEncoder
	current record.Schema
	schemas map[int32]record.Schema
	byKey   map[string]pkChange
	bytes   int64 // held: rows and keys
	key     []byte
}

func newPKChanges(current record.Schema, schemas map[int32]record.Schema) (*pkChanges, error) {
	keys, err := record.NewKeyEncoder(current, current.PrimaryKey)
	if err != nil {
		return nil, err
	}
	return &pkChanges{keys: keys, current: current, schemas: schemas, byKey: map[string]pkChange{}}, nil
}

// add takes a changelog record: +I and +U upsert its key, -D deletes it,
// -U (the old row of an update, whose +U follows) changes nothing.
func (c *pkChanges) add(rec Record, currentID int32) error {
	if rec.Batch != nil {
		return fmt.Errorf("lake: an Arrow batch in a primary-key table's changelog at offset %d", rec.Offset)
	}
	switch rec.Change {
	case record.UpdateBefore:
		return nil
	case record.Insert, record.UpdateAfter, record.Delete, record.AppendOnly:
	default:
		return fmt.Errorf("lake: change %v at offset %d", rec.Change, rec.Offset)
	}
	row, err := upgradeRow(c.schemas, currentID, c.current, rec.SchemaID, rec.Row, nil)
	if err != nil {
		return err
	}
	if c.key, err = c.keys.AppendKey(c.key[:0], row); err != nil {
		return fmt.Errorf("lake: the key of the record at offset %d: %w", rec.Offset, err)
	}
	ch := pkChange{offset: rec.Offset, timestampMs: rec.TimestampMs}
	if rec.Change != record.Delete {
		ch.row = slices.Clone(row)
	}
	if old, ok := c.byKey[string(c.key)]; ok {
		c.bytes -= int64(len(old.row))
	} else {
		c.bytes += int64(len(c.key)) + 64
	}
	c.bytes += int64(len(ch.row))
	c.byKey[string(c.key)] = ch
	return nil
}

// upgradeRow is row, of the table's schema version id, in the current
// version (currentID, current): row itself when it is of it, else
// upgraded into dst.
func upgradeRow(schemas map[int32]record.Schema, currentID int32, current record.Schema, id int32, row, dst []byte) ([]byte, error) {
	if id == currentID {
		return row, nil
	}
	from, ok := schemas[id]
	if !ok {
		return nil, fmt.Errorf("lake: a row of schema version %d, which the table does not have", id)
	}
	return record.UpgradeRow(from, current, row, dst)
}

// rewriteBucket writes bucket b's new data file: the rows of its current
// files (spans, of the version ix indexes) whose key no change touched,
// then the changed keys' rows in offset order. It returns no body when
// every row is gone.
func (t *Table) rewriteBucket(ctx context.Context, ix *Index, spans []FileSpan, b BucketRef, c *pkChanges, ls Schema) ([]byte, DataFile, error) {
	fb, err := NewFileBuilder(c.current, ls)
	if err != nil {
		return nil, DataFile{}, err
	}
	if len(spans) > 0 {
		err := t.keepUnchanged(ctx, ix.Schema, spans, c, func(row []byte, offset, timestampMs int64) error {
			return fb.Append(row, b.Bucket, offset, timestampMs)
		})
		if err != nil {
			return nil, DataFile{}, err
		}
	}
	if err := appendChanged(fb, b.Bucket, c); err != nil {
		return nil, DataFile{}, err
	}
	if fb.Rows() == 0 {
		return nil, DataFile{}, nil
	}
	return fb.Finish()
}

// appendChanged appends the changed keys' rows (deleted keys left out) to
// fb, in the order of their changes' offsets.
func appendChanged(fb *FileBuilder, bucket int32, c *pkChanges) error {
	changed := make([]pkChange, 0, len(c.byKey))
	for _, ch := range c.byKey {
		if ch.row != nil {
			changed = append(changed, ch)
		}
	}
	slices.SortFunc(changed, func(x, y pkChange) int { return compareInt64(x.offset, y.offset) })
	for _, ch := range changed {
		if err := fb.Append(ch.row, bucket, ch.offset, ch.timestampMs); err != nil {
			return err
		}
	}
	return nil
}

// keepUnchanged calls keep with each row of the files spans (of the lake
// schema schema) whose key the round did not change, in the files' order,
// with the row's offset and time.
func (t *Table) keepUnchanged(ctx context.Context, schema Schema, spans []FileSpan, c *pkChanges, keep func(row []byte, offset, timestampMs int64) error) error {
	w, err := NewBatchWriter(c.current, 0, false)
	if err != nil {
		return err
	}
	dec, err := arrowlog.NewDecoder(c.current)
	if err != nil {
		return err
	}
	fields := make([]int, len(c.current.Columns))
	for i, col := range c.current.Columns {
		if i < len(schema.Fields) && schema.Fields[i].Name == col.Name {
			fields[i] = schema.Fields[i].ID
		}
	}
	cols := w.ScanColumns(fields)
	var payload, key []byte
	for _, span := range spans {
		scan, err := t.OpenScan(ctx, span, schema, cols, span.From, 8192)
		if err != nil {
			return err
		}
		for {
			ch, err := scan.Next(ctx, 8192)
			if err == io.EOF {
				break
			}
			if err != nil {
				scan.Close()
				return err
			}
			rec := array.NewRecordBatch(w.schema, ch.Columns, int64(ch.Rows()))
			payload, err = w.enc.EncodeRecord(rec, payload[:0])
			rec.Release()
			if err == nil {
				err = dec.Rows(payload, ch.Rows(), func(i int, row []byte) error {
					var err error
					if key, err = c.keys.AppendKey(key[:0], row); err != nil {
						return fmt.Errorf("lake: %s: the key of the row at offset %d: %w", span.Key, ch.Offsets[i], err)
					}
					if _, changed := c.byKey[string(key)]; changed {
						return nil
					}
					return keep(row, ch.Offsets[i], ch.TimestampsMs[i])
				})
			}
			ch.Release()
			if err != nil {
				scan.Close()
				return err
			}
		}
		scan.Close()
	}
	return nil
}
