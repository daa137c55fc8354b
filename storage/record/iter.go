package record

import (
	"encoding/binary"
	"fmt"
)

// Record is one record of a batch. Data aliases the batch (or the buffer a
// compressed payload was decompressed into).
type Record struct {
	Offset int64
	Change ChangeType
	Data   []byte
}

// RecordIterator walks the records of one batch without allocating.
//
//	it, err := batch.Records(codec, scratch)
//	for it.Next() { use(it.Record()) }
//	if err := it.Err(); err != nil { ... }
type RecordIterator struct {
	payload []byte
	pos     int
	next    int64 // offset of the next record
	left    int32 // records not yet returned
	rec     Record
	err     error
}

// Records returns an iterator over the batch's records. A compressed payload
// is decompressed into scratch (grown as needed; pass the returned slice back
// next time to reuse it). The batch's CRC is not checked here: use Check.
// An Arrow batch has no records to iterate: it is refused with
// ErrArrowPayload (read it with storage/arrowlog).
func (b Batch) Records(codec *Codec, scratch []byte) (RecordIterator, []byte, error) {
	payload, err := codec.Decompress(b, scratch[:0])
	if err != nil {
		return RecordIterator{}, scratch, err
	}
	if b.Compression() != CompressionNone {
		scratch = payload
	}
	return RecordIterator{payload: payload, next: b.BaseOffset(), left: b.RecordCount()}, scratch, nil
}

// Next advances to the next record, reporting whether there is one.
func (it *RecordIterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.left == 0 {
		if it.pos != len(it.payload) {
			it.err = fmt.Errorf("%w: %d bytes after the last record", ErrCorruptBatch, len(it.payload)-it.pos)
		}
		return false
	}
	if it.pos >= len(it.payload) {
		it.err = fmt.Errorf("%w: payload ends with %d records missing", ErrCorruptBatch, it.left)
		return false
	}
	change := ChangeType(it.payload[it.pos])
	if !change.Valid() {
		it.err = fmt.Errorf("%w: record %d has change type %d", ErrCorruptBatch, it.next, change)
		return false
	}
	n, w := binary.Uvarint(it.payload[it.pos+1:])
	if w <= 0 || n > uint64(len(it.payload)-it.pos-1-w) {
		it.err = fmt.Errorf("%w: record %d has a bad length", ErrCorruptBatch, it.next)
		return false
	}
	start := it.pos + 1 + w
	end := start + int(n)
	it.rec = Record{Offset: it.next, Change: change, Data: it.payload[start:end:end]}
	it.pos = end
	it.next++
	it.left--
	return true
}

// Record returns the current record.
func (it *RecordIterator) Record() Record { return it.rec }

// Err returns the first structural error met, if any.
func (it *RecordIterator) Err() error { return it.err }

// BatchIterator walks the batches laid end to end in a buffer (a fetch
// response, a log read) without allocating. It checks headers; with
// VerifyCRC it also checks every batch's checksum.
type BatchIterator struct {
	data      []byte
	pos       int
	verifyCRC bool
	cur       Batch
	err       error
}

// NewBatchIterator returns an iterator over data.
func NewBatchIterator(data []byte, verifyCRC bool) BatchIterator {
	return BatchIterator{data: data, verifyCRC: verifyCRC}
}

// Next advances to the next batch.
func (it *BatchIterator) Next() bool {
	if it.err != nil || it.pos >= len(it.data) {
		return false
	}
	var b Batch
	var err error
	if it.verifyCRC {
		b, err = Check(it.data[it.pos:])
	} else {
		b, err = CheckHeader(it.data[it.pos:])
	}
	if err != nil {
		it.err = fmt.Errorf("batch at byte %d: %w", it.pos, err)
		return false
	}
	it.cur = b
	it.pos += len(b)
	return true
}

// Batch returns the current batch.
func (it *BatchIterator) Batch() Batch { return it.cur }

// Pos is the byte position after the current batch.
func (it *BatchIterator) Pos() int { return it.pos }

// Err returns the first invalid batch met, if any.
func (it *BatchIterator) Err() error { return it.err }
