package replica

import (
	"errors"
	"fmt"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// maxProjectedReads bounds how many times a projected consumer read goes
// back to the log for more: a read of 2 of 20 columns sends a tenth of
// what it reads, so it reads on until its answer fills the budget, at
// most this many budgets of stored bytes.
const maxProjectedReads = 16

// checkColumns checks a consumer's projection: column indexes, each once,
// within the widest schema a table may have.
func checkColumns(columns []int32) error {
	if len(columns) > record.MaxColumns {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "projection of %d columns, more than %d", len(columns), record.MaxColumns)
	}
	seen := make(map[int32]bool, len(columns))
	for _, c := range columns {
		switch {
		case c < 0 || c >= record.MaxColumns:
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "projection: column index %d not in [0, %d)", c, record.MaxColumns)
		case seen[c]:
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "projection: column index %d given twice", c)
		}
		seen[c] = true
	}
	return nil
}

// projector cuts the Arrow batches of a consumer's read to the columns it
// asked for.
type projector struct {
	columns []int32
	// schemaOf returns a schema version of the table.
	schemaOf func(id int16) (record.Schema, bool)
	present  []int // scratch: the columns a batch's schema has
	payload  []byte
	batch    record.Batch
}

// appendProjected appends the batches of data (whole batches read from
// the log, trusted) to out, each Arrow batch cut to the columns of p that
// its schema version has; other batches (rows, control) are appended
// whole, as is an Arrow batch that holds none of the columns or exactly
// the ones asked for, or whose schema version this node does not know yet:
// the client cuts those itself. It stops before a batch that would take
// out past limit bytes, unless out is empty (the first batch always goes),
// and returns the offset after the last batch appended, and whether it
// stopped for the limit.
func (p *projector) appendProjected(out, data []byte, limit int) ([]byte, int64, bool, error) {
	next := int64(-1)
	it := record.NewBatchIterator(data, false)
	for it.Next() {
		b := it.Batch()
		cut, err := p.cut(b)
		if err != nil {
			return out, next, false, err
		}
		if len(out) > 0 && len(out)+len(cut) > limit {
			return out, next, true, nil
		}
		out = append(out, cut...)
		next = b.NextOffset()
	}
	if err := it.Err(); err != nil && !errors.Is(err, record.ErrShortBatch) {
		return out, next, false, err
	}
	return out, next, false, nil
}

// cut returns b cut to the columns of p, or b itself when it is not cut
// (see appendProjected). The result is valid until the next call.
func (p *projector) cut(b record.Batch) (record.Batch, error) {
	if b.PayloadFormat() != record.PayloadArrow {
		return b, nil
	}
	s, ok := p.schemaOf(b.SchemaID())
	if !ok {
		return b, nil
	}
	p.present = p.present[:0]
	whole := len(p.columns) == len(s.Columns)
	for i, c := range p.columns {
		if int(c) < len(s.Columns) {
			p.present = append(p.present, int(c))
			whole = whole && int(c) == i
		}
	}
	if whole || len(p.present) == 0 {
		return b, nil
	}
	var err error
	if p.payload, err = arrowlog.Project(s, b.Payload(), p.present, p.payload[:0]); err != nil {
		return nil, fmt.Errorf("%w: batch at offset %d: %w", record.ErrCorruptBatch, b.BaseOffset(), err)
	}
	p.batch, err = record.ProjectBatch(b, p.payload, p.batch[:0])
	return p.batch, err
}

// projector returns a projector of the columns over the table's schema
// versions.
func (r *Replica) projector(columns []int32) *projector {
	info := r.table()
	return &projector{columns: columns, schemaOf: info.schemaOf}
}

// readProjected reads batches from offset below limit into out, cut to
// p's columns, reading on until the answer holds budget bytes, the log
// ends, or it has read maxProjectedReads budgets of stored bytes.
func (r *Replica) readProjected(from, limit int64, budget int, p *projector, out *pb.FetchedBucket) error {
	for reads := 0; reads < maxProjectedReads && from < limit && len(out.Records) < budget; reads++ {
		recs, err := r.log.ReadBelow(from, limit, budget)
		if err != nil {
			if reads > 0 {
				return nil // an answer is there: the next fetch meets the error
			}
			return r.readError(err)
		}
		var next int64
		var full bool
		out.Records, next, full, err = p.appendProjected(out.Records, recs.Data, budget)
		recs.Release()
		if err != nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT, "bucket %s: %v", r.id, err)
		}
		if full || next <= from {
			return nil
		}
		from = next
	}
	return nil
}
