package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/floedb/floe/internal/pkgerr"
)

// BatchOptions are the header fields a writer chooses. The zero value is an
// uncompressed row batch of schema 0 with no idempotent writer.
type BatchOptions struct {
	SchemaID    int16
	Format      PayloadFormat
	Compression Compression
	// Codec compresses the payload; required when Compression is not none.
	Codec *Codec
	// AppendOnly marks a log-table batch: every record is +A.
	AppendOnly bool
	// Projected marks an Arrow batch holding some of its schema's
	// columns, which its reader asked for: a fetch answer, never a log's
	// (BuildBatch only).
	Projected bool
	// WriterID and Sequence identify the batch for idempotent writes. Set
	// HasWriter to use them; otherwise they are written as -1.
	HasWriter bool
	WriterID  int64
	Sequence  int32
}

// ErrBatchFull is returned by Append when a record would push the batch past
// its size limit.
var ErrBatchFull = pkgerr.New("record", "batch full")

// BatchBuilder accumulates records into one batch. It reuses its buffers:
// after Reset, a builder in steady state appends and builds without
// allocating (compression aside).
type BatchBuilder struct {
	opts    BatchOptions
	buf     []byte // header followed by uncompressed records
	out     []byte // compressed batch, when compressing
	count   int32
	maxSize int
}

// NewBatchBuilder returns a builder for batches of at most maxBatchBytes
// uncompressed bytes (0 = MaxBatchSize).
func NewBatchBuilder(opts BatchOptions, maxBatchBytes int) *BatchBuilder {
	b := &BatchBuilder{}
	b.Reset(opts, maxBatchBytes)
	return b
}

// Reset starts a new batch, keeping the buffers.
func (b *BatchBuilder) Reset(opts BatchOptions, maxBatchBytes int) {
	if maxBatchBytes <= 0 || maxBatchBytes > MaxBatchSize {
		maxBatchBytes = MaxBatchSize
	}
	b.opts = opts
	b.maxSize = maxBatchBytes
	b.count = 0
	if cap(b.buf) < HeaderSize {
		b.buf = make([]byte, HeaderSize, 16<<10)
	}
	b.buf = b.buf[:HeaderSize]
	clear(b.buf)
}

// Grow makes room for n more bytes of records without reallocating.
func (b *BatchBuilder) Grow(n int) { b.buf = slices.Grow(b.buf, n) }

// Cap is the size of the builder's buffer: what it keeps across Resets.
func (b *BatchBuilder) Cap() int { return cap(b.buf) }

// Len is the number of records appended.
func (b *BatchBuilder) Len() int { return int(b.count) }

// Size is the uncompressed size of the batch so far, header included.
func (b *BatchBuilder) Size() int { return len(b.buf) }

// RecordSize is the encoded size of a record with dataLen bytes of data.
func RecordSize(dataLen int) int {
	return 1 + uvarintLen(uint64(dataLen)) + dataLen
}

// Append adds a record. It returns ErrBatchFull, appending nothing, when the
// record does not fit, unless the batch is empty: a single record larger
// than the limit still makes a batch, for the receiver's limits to judge.
func (b *BatchBuilder) Append(change ChangeType, data []byte) error {
	if !change.Valid() {
		return pkgerr.Errorf("record", "invalid change type %d", change)
	}
	if b.count > 0 && len(b.buf)+RecordSize(len(data)) > b.maxSize {
		return ErrBatchFull
	}
	if len(b.buf)+RecordSize(len(data)) > MaxBatchSize {
		return fmt.Errorf("%w: record of %d bytes exceeds the %d-byte batch limit", ErrBatchFull, len(data), MaxBatchSize)
	}
	b.buf = append(b.buf, byte(change))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(data)))
	b.buf = append(b.buf, data...)
	b.count++
	return nil
}

// Build finishes the batch and returns it. The batch aliases the builder's
// buffers and is valid until the next Reset or Build. Base offset, commit
// timestamp and leader epoch are zero, for the leader to stamp.
func (b *BatchBuilder) Build() (Batch, error) {
	if b.count == 0 {
		return nil, pkgerr.New("record", "cannot build an empty batch")
	}
	if err := checkFormat(b.opts.Format, b.opts.Compression); err != nil {
		return nil, err
	}
	batch := Batch(b.buf)
	if compressesWhole(b.opts) {
		out, err := compressPayload(b.opts, append(b.out[:0], b.buf[:HeaderSize]...), b.buf[HeaderSize:])
		if err != nil {
			return nil, err
		}
		b.out = out
		batch = Batch(out)
	}
	writeHeader(batch, b.opts, b.count)
	return batch, nil
}

// compressesWhole reports whether a batch's payload is compressed as a
// whole: when it says a compression, unless it is an Arrow payload, whose
// compression bits name the codec of its body buffers.
func compressesWhole(opts BatchOptions) bool {
	return opts.Compression != CompressionNone && opts.Format != PayloadArrow
}

// compressPayload appends payload compressed as opts say to dst.
func compressPayload(opts BatchOptions, dst, payload []byte) ([]byte, error) {
	if opts.Codec == nil {
		return nil, pkgerr.Errorf("record", "%v compression needs a codec", opts.Compression)
	}
	return opts.Codec.compress(opts.Compression, dst, payload)
}

// writeHeader fills the header of batch, whose payload is in place, and
// its CRC.
func writeHeader(batch Batch, opts BatchOptions, count int32) {
	h := batch[:HeaderSize]
	binary.BigEndian.PutUint32(h[lengthPos:], uint32(len(batch)-LogOverhead))
	h[magicPos] = CurrentMagic
	binary.BigEndian.PutUint16(h[schemaIDPos:], uint16(opts.SchemaID))
	attrs := uint16(opts.Format)&payloadFormatMask | uint16(opts.Compression)<<compressionShift&compressionMask
	if opts.AppendOnly {
		attrs |= appendOnlyBit
	}
	if opts.Projected {
		attrs |= projectedBit
	}
	binary.BigEndian.PutUint16(h[attributesPos:], attrs)
	binary.BigEndian.PutUint32(h[lastOffsetDeltaPos:], uint32(count-1))
	writerID, seq := int64(NoWriterID), int32(NoSequence)
	if opts.HasWriter {
		writerID, seq = opts.WriterID, opts.Sequence
	}
	binary.BigEndian.PutUint64(h[writerIDPos:], uint64(writerID))
	binary.BigEndian.PutUint32(h[batchSequencePos:], uint32(seq))
	binary.BigEndian.PutUint32(h[recordCountPos:], uint32(count))
	binary.BigEndian.PutUint32(h[crcPos:], crc32.Checksum(batch[crcStart:], castagnoli))
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
