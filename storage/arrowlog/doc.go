// Package arrowlog writes and reads the payloads of log-table batches in
// Arrow's columnar format: Floe rows in, one Arrow IPC record batch out,
// and back; it checks payloads from untrusted writers, and cuts columns out
// of a payload without decompressing it.
//
// # Payload
//
// A batch whose attributes say record.PayloadArrow carries, after its
// 53-byte header (see storage/record), exactly one encapsulated Arrow IPC
// message of type RecordBatch, as Arrow's IPC format defines it:
//
//	0xFFFFFFFF                continuation marker (int32 -1, little-endian)
//	int32 metadata size       bytes of flatbuffer and padding, a multiple of 8
//	flatbuffer Message        version V5, header RecordBatch: length (the
//	                          record count), one FieldNode per column
//	                          (length, null count), the Buffers (offset and
//	                          length in the body) and, when compressed,
//	                          BodyCompression (codec LZ4_FRAME or ZSTD,
//	                          method BUFFER)
//	padding                   zeros to 8 bytes
//	body                      the buffers, each at an offset that is a
//	                          multiple of 8
//
// No schema message precedes it: the schema is the table's at the batch's
// schema id, and ArrowSchema gives it in Arrow's terms. Nothing the schema
// determines is stored per batch. Columns appear in schema order, each
// with the buffers of its Arrow layout: a validity bitmap (empty when the
// column has no null in the batch), then for BOOLEAN a bitmap of values,
// for fixed-width types the values, for STRING and BYTES int32 offsets and
// the value bytes.
//
// When compressed, every non-empty buffer is compressed on its own as
// Arrow's BodyCompression says: an int64 uncompressed length, then the
// zstd frame or LZ4 frame, or -1 and the bytes as they are when
// compressing would not save space. The batch header's compression bits
// name the same codec (record.CompressionZstd or CompressionLZ4) and the
// payload is never compressed as a whole, so Project copies compressed
// buffers as they are.
//
// Arrow's IPC readers read a payload given the schema message of
// ArrowSchema before it (as TestArrowReaderReadsPayloads does with
// arrow-go), so engines that read Arrow read log tables.
//
// # Types
//
//	Floe type               Arrow type
//	BOOLEAN                 bool
//	TINYINT                 int8
//	SMALLINT                int16
//	INT                     int32
//	BIGINT                  int64
//	FLOAT                   float32
//	DOUBLE                  float64
//	DECIMAL(p,s)            decimal128(p, s)
//	STRING                  utf8
//	BYTES                   binary
//	DATE                    date32 (days)
//	TIME                    time32[ms]
//	TIMESTAMP(p), p ≤ 6     timestamp[us], no time zone
//	TIMESTAMP(p), p 7-9     timestamp[ns], no time zone
//	TIMESTAMP_LTZ(p), p ≤ 6 timestamp[us, UTC]
//	TIMESTAMP_LTZ(p), p 7-9 timestamp[ns, UTC]
//
// A field is nullable as its column. ARRAY, MAP and ROW will map to list,
// map and struct: the type mapping, shapeOf (nodes and buffers from the
// Arrow type, recursively), columnBuilder and columnReader are where they
// slot in as children; until then their kinds are ErrUnsupportedType.
//
// # Limits
//
// Arrow's timestamp[ns] is int64 nanoseconds since the epoch: the years
// 1677 to 2262 (1677-09-21T00:12:43.145224192Z to
// 2262-04-11T23:47:16.854775807Z). A TIMESTAMP(7-9) or TIMESTAMP_LTZ(7-9)
// value outside it, which the row format holds (years 0000 to 9999), is
// refused by Encoder.Append with a *TimestampRangeError
// (ErrTimestampRange). STRING and BYTES columns hold at most 2 GiB of
// values per batch (int32 offsets; ErrColumnTooLarge). A decoder refuses a
// compressed payload whose buffers declare more than
// DecoderConfig.MaxBodyBytes uncompressed (*LimitError, ErrBodyTooLarge)
// before inflating anything.
//
// # Validation
//
// Decoder.Validate reads a payload as an untrusted writer may have built
// it: every flatbuffer offset is checked before it is followed, the
// message must be one RecordBatch whose counts of field nodes and buffers
// are the schema's and whose lengths are the batch's record count, every
// buffer must lie inside the body and be large enough for its column,
// offsets must never decrease, validity bitmaps must agree with null
// counts, and every value goes through a record.RowEncoder, the same
// checks as record.ValidateRow (NOT NULL, UTF-8, decimal precision, DATE,
// TIME and timestamp ranges, timestamp digits beyond the precision).
package arrowlog
