package record

import (
	"encoding/binary"
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
)

// ErrArrowPayload is returned by Batch.Records and Codec.Decompress for a
// PayloadArrow batch: its records are columns that only their schema
// decodes, with package storage/arrowlog, and its payload is never
// compressed as a whole.
var ErrArrowPayload = pkgerr.New("record", "an Arrow payload is read by columns under its schema (storage/arrowlog), not as records")

// checkFormat reports whether a batch may have the payload format and
// compression: LZ4 compresses only Arrow body buffers.
func checkFormat(format PayloadFormat, comp Compression) error {
	switch {
	case format > PayloadArrow:
		return pkgerr.Errorf("record", "unknown payload format %d", format)
	case comp > CompressionLZ4:
		return pkgerr.Errorf("record", "unknown compression %v", comp)
	case comp == CompressionLZ4 && format != PayloadArrow:
		return pkgerr.Errorf("record", "lz4 compression is for Arrow payloads only, not payload format %d", format)
	}
	return nil
}

// ProjectBatch appends to dst a copy of Arrow batch b whose payload is
// payload, b's payload cut to some of its columns, and returns it: every
// header field is b's (offsets, timestamp, epoch, writer and sequence,
// record count, schema id), with the projected bit set and the length
// and CRC of the new payload. The reader learns the columns it holds from
// its request; a projected batch is for a fetch answer, never for a log.
func ProjectBatch(b Batch, payload []byte, dst []byte) (Batch, error) {
	if b.PayloadFormat() != PayloadArrow {
		return nil, pkgerr.Errorf("record", "only Arrow batches are projected, not payload format %d", b.PayloadFormat())
	}
	start := len(dst)
	dst = append(dst, b[:HeaderSize]...)
	dst = append(dst, payload...)
	out := Batch(dst[start:])
	binary.BigEndian.PutUint32(out[lengthPos:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint16(out[attributesPos:], b.Attributes()|projectedBit)
	binary.BigEndian.PutUint32(out[crcPos:], out.ComputeCRC())
	return out, nil
}

// BuildBatch appends to dst a batch of recordCount records whose payload is
// already encoded (an Arrow payload from storage/arrowlog, most often) and
// returns it, a view of the appended bytes. The header follows the rules of
// BatchBuilder.Build: a payload other than PayloadArrow is compressed as a
// whole when opts say a compression; an Arrow payload is stored as it is,
// its compression bits naming the codec of its body buffers.
func BuildBatch(opts BatchOptions, recordCount int32, payload []byte, dst []byte) (Batch, error) {
	if recordCount < 1 {
		return nil, pkgerr.Errorf("record", "cannot build a batch of %d records", recordCount)
	}
	if err := checkFormat(opts.Format, opts.Compression); err != nil {
		return nil, err
	}
	if opts.Projected && opts.Format != PayloadArrow {
		return nil, pkgerr.Errorf("record", "only Arrow batches are projected, not payload format %d", opts.Format)
	}
	if HeaderSize+len(payload) > MaxBatchSize {
		return nil, fmt.Errorf("%w: payload of %d bytes exceeds the %d-byte batch limit", ErrBatchFull, len(payload), MaxBatchSize)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	if compressesWhole(opts) {
		var err error
		if dst, err = compressPayload(opts, dst, payload); err != nil {
			return nil, err
		}
	} else {
		dst = append(dst, payload...)
	}
	batch := Batch(dst[start:])
	if len(batch) > MaxBatchSize {
		return nil, fmt.Errorf("%w: compressed batch of %d bytes exceeds the %d-byte batch limit", ErrBatchFull, len(batch), MaxBatchSize)
	}
	writeHeader(batch, opts, recordCount)
	return batch, nil
}
