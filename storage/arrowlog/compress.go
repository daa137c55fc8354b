package arrowlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
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
	notCompressedPrefix     = 1<<64 - 1 // notCompressed as a uint64

	// defaultZstdLevel is the level of Options.Level 0.
	defaultZstdLevel = 3
	// lz4BlockSize is the frame block size, as Arrow's writers use: body
	// buffers of a log batch are small.
	lz4BlockSize = lz4.Block64Kb
)

// compressor compresses body buffers for one encoder.
type compressor struct {
	comp record.Compression
	zstd *zstd.Encoder
	lz4  *lz4.Writer
	out  appendWriter // lz4's destination
}

func newCompressor(opts Options) (*compressor, error) {
	c := &compressor{comp: opts.Compression}
	switch opts.Compression {
	case record.CompressionNone:
	case record.CompressionZstd:
		level := opts.Level
		if level == 0 {
			level = defaultZstdLevel
		}
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true))
		if err != nil {
			return nil, pkgerr.Errorf("arrowlog", "zstd encoder: %w", err)
		}
		c.zstd = enc
	case record.CompressionLZ4:
		c.lz4 = lz4.NewWriter(nil)
		if err := c.lz4.Apply(lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4BlockSize)); err != nil {
			return nil, pkgerr.Errorf("arrowlog", "lz4 writer: %w", err)
		}
	default:
		return nil, pkgerr.Errorf("arrowlog", "unknown compression %v", opts.Compression)
	}
	return c, nil
}

// codec is the BodyCompression codec of the compressor's payloads.
func (c *compressor) codec() int8 {
	if c.comp == record.CompressionLZ4 {
		return codecLZ4Frame
	}
	return codecZstd
}

// appendBuffer appends raw compressed, with its length prefix, to dst.
func (c *compressor) appendBuffer(dst, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return dst, nil
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(raw)))
	switch c.comp {
	case record.CompressionZstd:
		dst = c.zstd.EncodeAll(raw, dst)
	case record.CompressionLZ4:
		c.out.buf = dst
		c.lz4.Reset(&c.out)
		if _, err := c.lz4.Write(raw); err != nil {
			return nil, pkgerr.Errorf("arrowlog", "lz4: %w", err)
		}
		if err := c.lz4.Close(); err != nil {
			return nil, pkgerr.Errorf("arrowlog", "lz4: %w", err)
		}
		dst, c.out.buf = c.out.buf, nil
	}
	if len(dst)-start-uncompressedPrefixBytes >= len(raw) {
		// Not worth it: store the bytes as they are.
		dst = binary.LittleEndian.AppendUint64(dst[:start], notCompressedPrefix)
		dst = append(dst, raw...)
	}
	return dst, nil
}

// appendWriter is an io.Writer appending to buf.
type appendWriter struct{ buf []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

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
			// its capacity, whatever the frame claims.
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true),
				zstd.WithDecoderMaxWindow(zstdWindowBytes))
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
