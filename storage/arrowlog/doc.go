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
// the value bytes, for a list or map int32 offsets into its child; a
// nested column's children follow it, depth first (a map's child is its
// entries struct, whose children are the key and the value). A null list
// or map is empty; under a null struct every field has a value that is
// not null (zero, empty).
//
// When compressed, every non-empty buffer is compressed on its own as
// Arrow's BodyCompression says: an int64 uncompressed length, then the
// zstd frame or LZ4 frame, or -1 and the bytes as they are when
// compressing would not save space. The batch header's compression bits
// name the same codec (record.CompressionZstd or CompressionLZ4) and the
// payload is never compressed as a whole, so Project copies compressed
// buffers as they are.
//
// The Encoder appends rows to arrow-go's array builders and writes each
// batch with arrow-go's IPC stream writer (github.com/apache/arrow-go/v18,
// ipc.NewWriter), keeping only its record batch message: the schema
// message the stream starts with (the same bytes for a schema, which the
// encoder checks) and the end-of-stream marker are dropped. A buffer that
// compressing would not shrink by 1% is stored as it is.
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
//	ARRAY<T>                list<element: T>
//	MAP<K, V>               map<K, V> (entries<key: K, value: V>,
//	                        keysSorted false: entries in written order)
//	ROW<f1 T1, ..., fk Tk>  struct<f1: T1, ..., fk: Tk>
//
// A field is nullable as its column; a list's element, a map's value and
// a struct's fields as the ARRAY, MAP or ROW type says, a map's key never.
// Nested types map recursively, to any depth the row format allows
// (record.MaxNestingDepth).
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
// offsets must never decrease and a list's or map's must stay within its
// child, validity bitmaps must agree with null counts, map entries are
// never null, and every value goes through a record.RowEncoder (nested
// ones through record's ArrayEncoder, MapEncoder and row value encoder),
// the same checks as record.ValidateRow (NOT NULL at every depth, UTF-8,
// decimal precision, DATE, TIME and timestamp ranges, timestamp digits
// beyond the precision, map keys distinct and never null). Project cuts a
// nested column as a whole: its field nodes and buffers and all its
// children's.
package arrowlog
