package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/floedb/floe/internal/pkgerr"
)

// Byte positions of the batch header fields; see the package documentation.
const (
	baseOffsetPos      = 0
	lengthPos          = 8
	magicPos           = 12
	commitTimestampPos = 13
	leaderEpochPos     = 21
	crcPos             = 25
	schemaIDPos        = 29
	attributesPos      = 31
	lastOffsetDeltaPos = 33
	writerIDPos        = 37
	batchSequencePos   = 45
	recordCountPos     = 49

	// HeaderSize is the size of a batch header in bytes.
	HeaderSize = 53
	// LogOverhead is the number of header bytes not counted by the length
	// field: the base offset and the length itself.
	LogOverhead = 12
	// crcStart is where the checksummed bytes begin.
	crcStart = schemaIDPos

	// CurrentMagic is the batch format version this package writes.
	CurrentMagic = 0

	// MaxBatchSize bounds any batch this package accepts, whatever the
	// configured limits above it: a length beyond it is corruption.
	MaxBatchSize = 1 << 30

	// minRecordSize is the smallest encoded record: a change type and a
	// zero length.
	minRecordSize = 2

	// NoWriterID marks a batch without an idempotent writer.
	NoWriterID = -1
	// NoSequence marks a batch without a batch sequence.
	NoSequence = -1
)

// Attribute bits.
const (
	payloadFormatMask  = 0x0007
	compressionShift   = 3
	compressionMask    = 0x0038
	appendOnlyBit      = 0x0040
	projectedBit       = 0x0080
	knownAttributeBits = payloadFormatMask | compressionMask | appendOnlyBit | projectedBit
)

// PayloadFormat says how the records of a batch encode their data.
type PayloadFormat uint8

const (
	// PayloadRows: every record's data is a row in the compact row format.
	PayloadRows PayloadFormat = 0
	// PayloadRaw: record data is opaque bytes (internal batches, tests).
	PayloadRaw PayloadFormat = 1
	// PayloadControl: a batch that changes no table data but takes offsets
	// in the log, written by a leader: a barrier of a linearizable read, or
	// the record of an idempotent write that changed nothing (so its writer
	// sequence survives in the log). Each record's data starts with a
	// ControlKind byte. Readers of table data skip control batches.
	PayloadControl PayloadFormat = 2
	// PayloadArrow: the payload is one Arrow IPC record batch message whose
	// schema the batch's schema id names (see payload_arrow.go and
	// storage/arrowlog). It is never compressed as a whole.
	PayloadArrow PayloadFormat = 3
)

func (f PayloadFormat) String() string {
	switch f {
	case PayloadRows:
		return "rows"
	case PayloadRaw:
		return "raw"
	case PayloadControl:
		return "control"
	case PayloadArrow:
		return "arrow"
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// ControlKind is the first byte of a control record.
type ControlKind uint8

const (
	// ControlBarrier marks a point a linearizable read waits to see
	// committed.
	ControlBarrier ControlKind = 1
	// ControlNoop stands for an idempotent write whose merge produced no
	// change.
	ControlNoop ControlKind = 2
)

// Compression is the codec applied to a batch's payload, or for
// PayloadArrow to the Arrow body buffers inside it.
type Compression uint8

const (
	CompressionNone Compression = 0
	CompressionZstd Compression = 1
	// CompressionLZ4 is the LZ4 frame format, for PayloadArrow only.
	CompressionLZ4 Compression = 2
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionZstd:
		return "zstd"
	case CompressionLZ4:
		return "lz4"
	default:
		return fmt.Sprintf("compression(%d)", uint8(c))
	}
}

// ParseCompression reads a compression name as given in configuration.
func ParseCompression(name string) (Compression, error) {
	switch name {
	case "", "none":
		return CompressionNone, nil
	case "zstd":
		return CompressionZstd, nil
	case "lz4":
		return CompressionLZ4, nil
	default:
		return 0, pkgerr.Errorf("record", "unknown compression %q (want none, zstd or lz4)", name)
	}
}

// Errors returned for malformed batches. ErrCorruptBatch covers everything a
// reader cannot trust: bad CRC, impossible lengths or counts.
var (
	ErrCorruptBatch = pkgerr.New("record", "corrupt batch")
	ErrShortBatch   = pkgerr.New("record", "batch shorter than its header says")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is a view of one encoded record batch. It does not copy: the bytes
// belong to whoever handed them out (a log segment mapping, a network buffer).
type Batch []byte

// BaseOffset is the offset of the first record.
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[baseOffsetPos:])) }

// Size is the whole batch's size in bytes, header included, as its length field says.
func (b Batch) Size() int { return LogOverhead + int(int32(binary.BigEndian.Uint32(b[lengthPos:]))) }

// Magic is the format version.
func (b Batch) Magic() byte { return b[magicPos] }

// CommitTimestamp is the leader's append time in Unix milliseconds.
func (b Batch) CommitTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(b[commitTimestampPos:]))
}

// LeaderEpoch is the epoch of the leader that appended the batch.
func (b Batch) LeaderEpoch() int32 { return int32(binary.BigEndian.Uint32(b[leaderEpochPos:])) }

// CRC is the stored checksum.
func (b Batch) CRC() uint32 { return binary.BigEndian.Uint32(b[crcPos:]) }

// SchemaID is the schema version of the rows.
func (b Batch) SchemaID() int16 { return int16(binary.BigEndian.Uint16(b[schemaIDPos:])) }

// Attributes returns the raw attribute bits.
func (b Batch) Attributes() uint16 { return binary.BigEndian.Uint16(b[attributesPos:]) }

// PayloadFormat says how record data is encoded.
func (b Batch) PayloadFormat() PayloadFormat {
	return PayloadFormat(b.Attributes() & payloadFormatMask)
}

// Compression is the payload codec.
func (b Batch) Compression() Compression {
	return Compression((b.Attributes() & compressionMask) >> compressionShift)
}

// AppendOnly reports whether every record is an append (+A), as in log tables.
func (b Batch) AppendOnly() bool { return b.Attributes()&appendOnlyBit != 0 }

// Projected reports whether a leader cut the batch's Arrow payload to the
// columns a consumer asked for (ProjectBatch): it holds those columns of
// the batch's schema, not all of them. Only fetch answers carry such
// batches; logs never store one.
func (b Batch) Projected() bool { return b.Attributes()&projectedBit != 0 }

// LastOffsetDelta is RecordCount-1.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[lastOffsetDeltaPos:]))
}

// LastOffset is the offset of the last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset after the last record.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// WriterID is the idempotent writer's id, or NoWriterID.
func (b Batch) WriterID() int64 { return int64(binary.BigEndian.Uint64(b[writerIDPos:])) }

// BatchSequence is the writer's sequence number for this batch, or NoSequence.
func (b Batch) BatchSequence() int32 {
	return int32(binary.BigEndian.Uint32(b[batchSequencePos:]))
}

// RecordCount is the number of records.
func (b Batch) RecordCount() int32 { return int32(binary.BigEndian.Uint32(b[recordCountPos:])) }

// Payload returns the (possibly compressed) record bytes after the header.
func (b Batch) Payload() []byte { return b[HeaderSize:b.Size()] }

// SetBaseOffset stamps the base offset (outside the CRC).
func (b Batch) SetBaseOffset(off int64) {
	binary.BigEndian.PutUint64(b[baseOffsetPos:], uint64(off))
}

// SetCommitTimestamp stamps the commit time (outside the CRC).
func (b Batch) SetCommitTimestamp(ms int64) {
	binary.BigEndian.PutUint64(b[commitTimestampPos:], uint64(ms))
}

// SetLeaderEpoch stamps the leader epoch (outside the CRC).
func (b Batch) SetLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b[leaderEpochPos:], uint32(epoch))
}

// ComputeCRC computes the checksum the batch should carry.
func (b Batch) ComputeCRC() uint32 {
	return crc32.Checksum(b[crcStart:b.Size()], castagnoli)
}

// CRCStart is the byte position in a batch where its checksum starts: a
// reader that streams a batch instead of holding it whole (an upload's
// verification) checksums from there to the batch's end with UpdateCRC.
const CRCStart = crcStart

// UpdateCRC adds p to a batch checksum being computed piecewise (start
// from 0); the result over [CRCStart, Size()) equals ComputeCRC.
func UpdateCRC(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// PeekSize reads the size of the batch starting at data[0] from its length
// field without validating anything else. ok is false when data is shorter
// than a header or the length is impossible.
func PeekSize(data []byte) (size int, ok bool) {
	if len(data) < HeaderSize {
		return 0, false
	}
	length := int64(int32(binary.BigEndian.Uint32(data[lengthPos:])))
	if length < HeaderSize-LogOverhead || length > MaxBatchSize-LogOverhead {
		return 0, false
	}
	return LogOverhead + int(length), true
}

// CheckHeader validates the structure of the header at data[0] (size, magic,
// counts, attributes) without touching the payload. It returns the batch
// trimmed to its size. Use it where the CRC is checked separately or on
// purpose skipped (a scan of trusted data).
func CheckHeader(data []byte) (Batch, error) {
	size, ok := PeekSize(data)
	if !ok {
		if len(data) < HeaderSize {
			return nil, fmt.Errorf("%w: %d bytes, header needs %d", ErrShortBatch, len(data), HeaderSize)
		}
		return nil, fmt.Errorf("%w: impossible length %d", ErrCorruptBatch,
			int32(binary.BigEndian.Uint32(data[lengthPos:])))
	}
	if len(data) < size {
		return nil, fmt.Errorf("%w: have %d of %d bytes", ErrShortBatch, len(data), size)
	}
	b := Batch(data[:size])
	if b.Magic() != CurrentMagic {
		return nil, fmt.Errorf("%w: unknown magic %d", ErrCorruptBatch, b.Magic())
	}
	// Every record takes at least two bytes (change type and length), in
	// an uncompressed row or raw payload; an Arrow one may take a bit.
	count := b.RecordCount()
	maxCount := int64(MaxBatchSize / minRecordSize)
	if b.Compression() == CompressionNone && b.PayloadFormat() != PayloadArrow {
		maxCount = int64(size-HeaderSize) / minRecordSize
	}
	if count < 1 || int64(count) > maxCount {
		return nil, fmt.Errorf("%w: record count %d in %d bytes", ErrCorruptBatch, count, size)
	}
	if b.LastOffsetDelta() != count-1 {
		return nil, fmt.Errorf("%w: last offset delta %d with %d records", ErrCorruptBatch,
			b.LastOffsetDelta(), count)
	}
	if b.Attributes()&^knownAttributeBits != 0 || checkFormat(b.PayloadFormat(), b.Compression()) != nil ||
		(b.Projected() && b.PayloadFormat() != PayloadArrow) {
		return nil, fmt.Errorf("%w: unknown attributes %#04x", ErrCorruptBatch, b.Attributes())
	}
	if b.BaseOffset() < 0 || b.BaseOffset() > 1<<62 {
		return nil, fmt.Errorf("%w: base offset %d", ErrCorruptBatch, b.BaseOffset())
	}
	return b, nil
}

// Check validates the header at data[0] and the CRC of the batch, returning
// the batch trimmed to its size.
func Check(data []byte) (Batch, error) {
	b, err := CheckHeader(data)
	if err != nil {
		return nil, err
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return nil, fmt.Errorf("%w: crc %#08x, header says %#08x (base offset %d)",
			ErrCorruptBatch, got, want, b.BaseOffset())
	}
	return b, nil
}

// WholeBatches returns how many leading bytes of data are whole batches (by
// their length fields; nothing else is checked), and, when data ends
// inside a batch whose header it holds, that batch's size: a reader of a
// byte range (a remote segment read in chunks) keeps the whole ones and
// reads on from there, at least partial bytes if no batch was whole.
func WholeBatches(data []byte) (whole, partial int) {
	for whole < len(data) {
		size, ok := PeekSize(data[whole:])
		if !ok || whole+size > len(data) {
			return whole, size
		}
		whole += size
	}
	return whole, 0
}
