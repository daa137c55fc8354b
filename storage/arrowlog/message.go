package arrowlog

import (
	"encoding/binary"
	"math"

	flatbuffers "github.com/google/flatbuffers/go"
)

// The few parts of Arrow's Message.fbs and Schema.fbs a payload uses, by
// field id (a field's vtable slot is 4 + 2*id).
const (
	// table Message
	messageVersion    = 0 // MetadataVersion (short)
	messageHeaderType = 1 // MessageHeader union type (ubyte)
	messageHeader     = 2 // the union's table
	messageBodyLength = 3 // long
	messageFields     = 5 // with custom_metadata, which payloads leave out

	// table RecordBatch
	batchLength         = 0 // long
	batchNodes          = 1 // [FieldNode]
	batchBuffers        = 2 // [Buffer]
	batchCompression    = 3 // BodyCompression
	batchVariadicCounts = 4 // [long], for view types; payloads have none
	batchFields         = 5

	// table BodyCompression
	compressionCodec  = 0 // CompressionType (byte)
	compressionMethod = 1 // BodyCompressionMethod (byte)
	compressionFields = 2

	metadataV4 = 3 // MetadataVersion.V4
	metadataV5 = 4 // MetadataVersion.V5, what payloads are written in

	headerRecordBatch = 3 // MessageHeader.RecordBatch

	codecLZ4Frame = 0 // CompressionType.LZ4_FRAME
	codecZstd     = 1 // CompressionType.ZSTD

	methodBuffer = 0 // BodyCompressionMethod.BUFFER

	// structs FieldNode {length, null_count: long} and Buffer {offset,
	// length: long}
	structBytes = 16

	// The encapsulated message starts with the continuation marker and
	// the metadata's size.
	continuation = 0xFFFFFFFF
	prefixBytes  = 8
	alignment    = 8
)

// fieldNode is a FieldNode: a column's (or child's) length and nulls.
type fieldNode struct{ length, nullCount int64 }

// bufferRef is a Buffer: where a buffer sits in the body.
type bufferRef struct{ offset, length int64 }

// batchMeta is what a payload's metadata says.
type batchMeta struct {
	length  int64
	nodes   []fieldNode
	buffers []bufferRef
	// codec is codecLZ4Frame or codecZstd when compressed is set.
	compressed bool
	codec      int8
	bodyLength int64
}

// appendMessage appends an encapsulated RecordBatch message with meta and
// body (already laid out as meta.buffers say) to dst. fb is reused.
func appendMessage(dst []byte, fb *flatbuffers.Builder, meta *batchMeta, body []byte) []byte {
	fb.Reset()
	fb.StartVector(structBytes, len(meta.buffers), alignment)
	for i := len(meta.buffers) - 1; i >= 0; i-- {
		fb.Prep(alignment, structBytes)
		fb.PrependInt64(meta.buffers[i].length)
		fb.PrependInt64(meta.buffers[i].offset)
	}
	buffers := fb.EndVector(len(meta.buffers))
	fb.StartVector(structBytes, len(meta.nodes), alignment)
	for i := len(meta.nodes) - 1; i >= 0; i-- {
		fb.Prep(alignment, structBytes)
		fb.PrependInt64(meta.nodes[i].nullCount)
		fb.PrependInt64(meta.nodes[i].length)
	}
	nodes := fb.EndVector(len(meta.nodes))
	var compression flatbuffers.UOffsetT
	if meta.compressed {
		fb.StartObject(compressionFields)
		// Written even at its default (LZ4_FRAME is 0) so the table says
		// what it means to any reader.
		fb.PrependInt8(meta.codec)
		fb.Slot(compressionCodec)
		fb.PrependInt8Slot(compressionMethod, methodBuffer, methodBuffer)
		compression = fb.EndObject()
	}
	fb.StartObject(batchFields)
	fb.PrependInt64Slot(batchLength, meta.length, 0)
	fb.PrependUOffsetTSlot(batchNodes, nodes, 0)
	fb.PrependUOffsetTSlot(batchBuffers, buffers, 0)
	if meta.compressed {
		fb.PrependUOffsetTSlot(batchCompression, compression, 0)
	}
	header := fb.EndObject()
	fb.StartObject(messageFields)
	fb.PrependInt64Slot(messageBodyLength, int64(len(body)), 0)
	fb.PrependUOffsetTSlot(messageHeader, header, 0)
	fb.PrependInt16Slot(messageVersion, metadataV5, 0)
	fb.PrependByteSlot(messageHeaderType, headerRecordBatch, 0)
	fb.Finish(fb.EndObject())
	flat := fb.FinishedBytes()

	metaSize := padded(len(flat))
	dst = binary.LittleEndian.AppendUint32(dst, continuation)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(metaSize))
	dst = append(dst, flat...)
	dst = append(dst, make([]byte, metaSize-len(flat))...)
	return append(dst, body...)
}

// padded rounds n up to the alignment of Arrow buffers and metadata.
func padded(n int) int { return (n + alignment - 1) &^ (alignment - 1) }

// parseMessage reads the metadata of a payload into meta (reusing its
// slices) and returns the body. It checks every offset it follows, so no
// payload makes it panic, and that the message is a RecordBatch with
// nothing a payload never holds; it does not compare the metadata with a
// schema.
func parseMessage(payload []byte, meta *batchMeta) (body []byte, err error) {
	if len(payload) < prefixBytes || binary.LittleEndian.Uint32(payload) != continuation {
		return nil, invalidf("no encapsulated message (continuation marker and metadata size)")
	}
	metaSize := int64(int32(binary.LittleEndian.Uint32(payload[4:])))
	if metaSize < 0 || metaSize > int64(len(payload)-prefixBytes) {
		return nil, invalidf("metadata of %d bytes in a payload of %d", metaSize, len(payload))
	}
	flat, body := payload[prefixBytes:prefixBytes+metaSize], payload[prefixBytes+metaSize:]
	if len(flat) < flatbuffers.SizeUOffsetT {
		return nil, invalidf("metadata of %d bytes has no root table", len(flat))
	}
	msg, err := tableAt(flat, int(flatbuffers.GetUOffsetT(flat)))
	if err != nil {
		return nil, err
	}
	version, err := msg.int16(messageVersion)
	if err != nil {
		return nil, err
	}
	if version != metadataV4 && version != metadataV5 {
		return nil, invalidf("metadata version %d, want V4 or V5", version)
	}
	if kind, err := msg.uint8(messageHeaderType); err != nil {
		return nil, err
	} else if kind != headerRecordBatch {
		return nil, invalidf("message header type %d, want a RecordBatch (%d)", kind, headerRecordBatch)
	}
	if meta.bodyLength, err = msg.int64(messageBodyLength); err != nil {
		return nil, err
	}
	if meta.bodyLength != int64(len(body)) {
		return nil, invalidf("body of %d bytes, the message says %d", len(body), meta.bodyLength)
	}
	rb, ok, err := msg.table(messageHeader)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, invalidf("message has no RecordBatch")
	}
	if meta.length, err = rb.int64(batchLength); err != nil {
		return nil, err
	}
	if meta.nodes, err = readStructs(rb, batchNodes, meta.nodes[:0], func(b []byte) fieldNode {
		return fieldNode{length: int64(binary.LittleEndian.Uint64(b)), nullCount: int64(binary.LittleEndian.Uint64(b[8:]))}
	}); err != nil {
		return nil, err
	}
	if meta.buffers, err = readStructs(rb, batchBuffers, meta.buffers[:0], func(b []byte) bufferRef {
		return bufferRef{offset: int64(binary.LittleEndian.Uint64(b)), length: int64(binary.LittleEndian.Uint64(b[8:]))}
	}); err != nil {
		return nil, err
	}
	if _, n, err := rb.vector(batchVariadicCounts, 8); err != nil {
		return nil, err
	} else if n != 0 {
		return nil, invalidf("%d variadic buffer counts, for types no payload has", n)
	}
	comp, ok, err := rb.table(batchCompression)
	if err != nil {
		return nil, err
	}
	meta.compressed = ok
	if ok {
		codec, err := comp.uint8(compressionCodec)
		if err != nil {
			return nil, err
		}
		method, err := comp.uint8(compressionMethod)
		if err != nil {
			return nil, err
		}
		if (codec != codecLZ4Frame && codec != codecZstd) || method != methodBuffer {
			return nil, invalidf("body compression codec %d method %d, want LZ4_FRAME or ZSTD by BUFFER", codec, method)
		}
		meta.codec = int8(codec)
	}
	for i, b := range meta.buffers {
		if b.offset < 0 || b.length < 0 || b.length > int64(len(body)) || b.offset > int64(len(body))-b.length {
			return nil, invalidf("buffer %d at %d of %d bytes is outside the %d-byte body", i, b.offset, b.length, len(body))
		}
	}
	return body, nil
}

// readStructs appends the structs of vector field id of t, each decoded by
// read from its 16 bytes, to dst.
func readStructs[T any](t table, id int, dst []T, read func([]byte) T) ([]T, error) {
	start, n, err := t.vector(id, structBytes)
	if err != nil {
		return dst, err
	}
	for i := range n {
		dst = append(dst, read(t.buf[start+i*structBytes:]))
	}
	return dst, nil
}

// table is a flatbuffers table whose vtable has been checked to lie in its
// buffer. Its accessors check each field before reading it.
type table struct {
	flatbuffers.Table
	buf       []byte
	sizeBytes int // of the table's inline part, as its vtable says
}

// tableAt checks the table at pos of buf and its vtable.
func tableAt(buf []byte, pos int) (table, error) {
	if pos < 0 || pos > len(buf)-flatbuffers.SizeSOffsetT {
		return table{}, invalidf("metadata table at %d outside its %d bytes", pos, len(buf))
	}
	vt := int64(pos) - int64(flatbuffers.GetSOffsetT(buf[pos:]))
	if vt < 0 || vt > int64(len(buf))-2*flatbuffers.SizeVOffsetT {
		return table{}, invalidf("metadata vtable at %d outside its %d bytes", vt, len(buf))
	}
	vtSize := int64(flatbuffers.GetVOffsetT(buf[vt:]))
	tSize := int(flatbuffers.GetVOffsetT(buf[vt+2:]))
	if vtSize < 4 || vtSize%2 != 0 || vt+vtSize > int64(len(buf)) || tSize < 4 || pos+tSize > len(buf) {
		return table{}, invalidf("metadata vtable at %d (%d bytes, table of %d) does not fit its %d bytes", vt, vtSize, tSize, len(buf))
	}
	return table{Table: flatbuffers.Table{Bytes: buf, Pos: flatbuffers.UOffsetT(pos)}, buf: buf, sizeBytes: tSize}, nil
}

// field returns the position of field id, of size bytes, or ok=false when
// the table leaves it out (it then has its default).
func (t table) field(id, size int) (pos int, ok bool, err error) {
	off := int(t.Offset(flatbuffers.VOffsetT(4 + 2*id)))
	if off == 0 {
		return 0, false, nil
	}
	if off+size > t.sizeBytes {
		return 0, false, invalidf("metadata field %d at %d of a %d-byte table", id, off, t.sizeBytes)
	}
	return int(t.Pos) + off, true, nil
}

func (t table) int64(id int) (int64, error) {
	pos, ok, err := t.field(id, 8)
	if !ok {
		return 0, err
	}
	return t.GetInt64(flatbuffers.UOffsetT(pos)), nil
}

func (t table) int16(id int) (int16, error) {
	pos, ok, err := t.field(id, 2)
	if !ok {
		return 0, err
	}
	return t.GetInt16(flatbuffers.UOffsetT(pos)), nil
}

func (t table) uint8(id int) (uint8, error) {
	pos, ok, err := t.field(id, 1)
	if !ok {
		return 0, err
	}
	return t.GetUint8(flatbuffers.UOffsetT(pos)), nil
}

// table follows field id to the table it refers to.
func (t table) table(id int) (table, bool, error) {
	pos, ok, err := t.field(id, flatbuffers.SizeUOffsetT)
	if !ok {
		return table{}, false, err
	}
	target := int64(pos) + int64(t.GetUOffsetT(flatbuffers.UOffsetT(pos)))
	if target > math.MaxInt32 {
		return table{}, false, invalidf("metadata table at %d outside its %d bytes", target, len(t.buf))
	}
	sub, err := tableAt(t.buf, int(target))
	return sub, err == nil, err
}

// vector returns where the elements of vector field id start and how many
// there are, each elemBytes long; none when the table leaves it out.
func (t table) vector(id, elemBytes int) (start, n int, err error) {
	pos, ok, err := t.field(id, flatbuffers.SizeUOffsetT)
	if !ok {
		return 0, 0, err
	}
	at := int64(pos) + int64(t.GetUOffsetT(flatbuffers.UOffsetT(pos)))
	if at > int64(len(t.buf))-flatbuffers.SizeUOffsetT {
		return 0, 0, invalidf("metadata vector at %d outside its %d bytes", at, len(t.buf))
	}
	count := int64(flatbuffers.GetUOffsetT(t.buf[at:]))
	start64 := at + flatbuffers.SizeUOffsetT
	if count > (int64(len(t.buf))-start64)/int64(elemBytes) {
		return 0, 0, invalidf("metadata vector of %d elements at %d outside its %d bytes", count, at, len(t.buf))
	}
	return int(start64), int(count), nil
}
