package arrowlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A compressed body buffer is the int64 little-endian length of its
// uncompressed bytes followed by them compressed, or by them as they are
// when its length is -1 (compression would not have saved space). An empty
// buffer stays empty.
const (
	uncompressedPrefixBytes = 8
	notCompressed           = -1

	// defaultZstdLevel is the level of Options.Level 0.
	defaultZstdLevel = 3
)

// decompressor inflates body buffers for one decoder, into an arena sized
// once per payload from what the buffers declare.
type decompressor struct {
	zstd  *zstd.Decoder
	lz4   *lz4.Reader
	arena []byte
}

// zstdWindowBytes bounds the window a zstd frame may ask for: what one
// decoder allocates at most, whatever the payload.
const zstdWindowBytes = 8 << 20

// inflate returns the uncompressed bytes of every buffer of a compressed
// payload, in bufs (reused), refusing payloads whose buffers declare more
// than maxBytes in all.
func (d *decompressor) inflate(meta *batchMeta, body []byte, maxBytes int, bufs [][]byte) ([][]byte, error) {
	var total int64
	for i, ref := range meta.buffers {
		n, err := declaredSize(body[ref.offset:ref.offset+ref.length], i)
		if err != nil {
			return bufs, err
		}
		if total += n; total > int64(maxBytes) {
			return bufs, &LimitError{AtLeastBytes: total, LimitBytes: maxBytes}
		}
	}
	if int64(cap(d.arena)) < total {
		d.arena = make([]byte, total)
	}
	arena := d.arena[:total]
	for i, ref := range meta.buffers {
		src := body[ref.offset : ref.offset+ref.length]
		n, _ := declaredSize(src, i)
		switch {
		case len(src) == 0:
			bufs = append(bufs, nil)
			continue
		case int64(binary.LittleEndian.Uint64(src)) == notCompressed:
			bufs = append(bufs, src[uncompressedPrefixBytes:])
			continue
		case n == 0:
			bufs = append(bufs, nil)
			continue
		}
		out := arena[:n:n]
		arena = arena[n:]
		if err := d.inflateBuffer(meta.codec, out, src[uncompressedPrefixBytes:]); err != nil {
			return bufs, fmt.Errorf("%w: buffer %d: %v", ErrInvalidPayload, i, err)
		}
		bufs = append(bufs, out)
	}
	return bufs, nil
}

// declaredSize is the uncompressed size compressed buffer i says it has;
// for one stored as it is, the size counted against the limit is zero (it
// is not copied).
func declaredSize(src []byte, i int) (int64, error) {
	switch {
	case len(src) == 0:
		return 0, nil
	case len(src) < uncompressedPrefixBytes:
		return 0, invalidf("compressed buffer %d of %d bytes has no length prefix", i, len(src))
	}
	n := int64(binary.LittleEndian.Uint64(src))
	switch {
	case n == notCompressed:
		return 0, nil
	case n < 0:
		return 0, invalidf("compressed buffer %d declares %d bytes", i, n)
	}
	return n, nil
}

// inflateBuffer fills out, exactly, from the compressed src.
func (d *decompressor) inflateBuffer(codec int8, out, src []byte) error {
	if codec == codecZstd {
		if d.zstd == nil {
			// The cap limit makes DecodeAll write into out and never past
			// its capacity, whatever the frame claims. A frame's checksum
			// is not checked: the batch's CRC covers the payload, and
			// hashing every inflated byte again cost a third of the time.
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true),
				zstd.WithDecoderMaxWindow(zstdWindowBytes), zstd.IgnoreChecksum(true))
			if err != nil {
				return err
			}
			d.zstd = dec
		}
		got, err := d.zstd.DecodeAll(src, out[:0])
		if err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		if len(got) != len(out) {
			return fmt.Errorf("zstd: %d bytes, the buffer declares %d", len(got), len(out))
		}
		return nil
	}
	if d.lz4 == nil {
		d.lz4 = lz4.NewReader(nil)
	}
	d.lz4.Reset(bytes.NewReader(src))
	if _, err := io.ReadFull(d.lz4, out); err != nil {
		return fmt.Errorf("lz4: %w", err)
	}
	var extra [1]byte
	if n, err := d.lz4.Read(extra[:]); n != 0 || !errors.Is(err, io.EOF) {
		return fmt.Errorf("lz4: more bytes than the %d the buffer declares (%v)", len(out), err)
	}
	return nil
}
