package record

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/klauspost/compress/zstd"
)

// CodecConfig configures a Codec. The zero value is usable.
type CodecConfig struct {
	// MaxBatchBytes bounds what a compressed batch may inflate to: its
	// header and its decompressed payload, the size the batch would have
	// uncompressed, which is what an uncompressed batch is held to. A
	// payload that would inflate past it is refused with a *LimitError
	// (ErrDecompressedTooLarge) once that many bytes are out, whatever its
	// frame header claims. Default (0) MaxBatchSize.
	MaxBatchBytes int
}

// Validate reports the first invalid field.
func (c *CodecConfig) Validate() error {
	if c.MaxBatchBytes < 0 || c.MaxBatchBytes > MaxBatchSize {
		return pkgerr.Errorf("record", "codec config: MaxBatchBytes %d not in [0, %d]", c.MaxBatchBytes, MaxBatchSize)
	}
	return nil
}

// Codec compresses and decompresses batch payloads. It is safe for
// concurrent use; share one per process (or per limit).
type Codec struct {
	enc *zstd.Encoder
	// maxPayloadBytes bounds one decompressed payload.
	maxPayloadBytes int
	// decoders holds streaming decoders (*zstd.Decoder), one per
	// decompression running at once: DecodeAll would size its output from
	// the frame's claimed content size (up to 32 KiB per input byte), so a
	// 16 KiB payload claiming 1 GiB cost half a GiB before a byte was
	// checked; a stream is read into a buffer grown with what really
	// comes out.
	decoders       sync.Pool
	maxWindowBytes int
}

const (
	// decoderWindowBytes is the window every codec accepts, whatever its
	// limit: a window is allocated once per pooled decoder, not per batch.
	decoderWindowBytes = 8 << 20

	// Output of a decompression starts at decompressStartRatio times the
	// payload plus decompressStartSlack and doubles from there: rows
	// compress a few times at most, so most payloads need no second
	// buffer.
	decompressStartRatio = 8
	decompressStartSlack = 4 << 10
)

// NewCodec returns a codec whose decoder refuses payloads that would expand
// past cfg.MaxBatchBytes.
func NewCodec(cfg CodecConfig) (*Codec, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBatchBytes == 0 {
		cfg.MaxBatchBytes = MaxBatchSize
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true),
		zstd.WithEncoderCRC(false)) // the batch's CRC covers the payload
	if err != nil {
		return nil, pkgerr.Errorf("record", "zstd encoder: %w", err)
	}
	c := &Codec{enc: enc, maxPayloadBytes: max(cfg.MaxBatchBytes-HeaderSize, 0)}
	// A window larger than the whole output is never needed, but other
	// encoders declare theirs whatever the content (zstd's own default
	// tops at 8 MiB), so a batch under a small limit may still declare
	// that much.
	c.maxWindowBytes = min(max(c.maxPayloadBytes, decoderWindowBytes), zstd.MaxWindowSize)
	// Build one decoder now so a bad option fails here, not on a request.
	dec, err := c.newDecoder()
	if err != nil {
		enc.Close()
		return nil, err
	}
	c.decoders.Put(dec)
	return c, nil
}

func (c *Codec) newDecoder() (*zstd.Decoder, error) {
	// Concurrency 1 decodes synchronously on the caller's goroutine: no
	// goroutines are left behind by a decoder the pool drops.
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(uint64(c.maxWindowBytes)),
		zstd.WithDecoderMaxMemory(uint64(c.maxWindowBytes)),
		zstd.IgnoreChecksum(true)) // the batch's CRC covers the payload
	if err != nil {
		return nil, pkgerr.Errorf("record", "zstd decoder: %w", err)
	}
	return dec, nil
}

// MaxBatchBytes is the limit the codec holds decompressed batches to.
func (c *Codec) MaxBatchBytes() int { return c.maxPayloadBytes + HeaderSize }

// Close releases the codec's resources.
func (c *Codec) Close() {
	c.enc.Close()
}

func (c *Codec) compress(comp Compression, dst, src []byte) ([]byte, error) {
	switch comp {
	case CompressionZstd:
		return c.enc.EncodeAll(src, dst), nil
	default:
		return nil, pkgerr.Errorf("record", "cannot compress with %v", comp)
	}
}

// Decompress appends the decompressed payload of b to dst. For an
// uncompressed batch it returns the payload itself without copying. A
// payload that inflates past the codec's limit fails with a *LimitError.
// An Arrow payload is refused (ErrArrowPayload): it is never compressed as
// a whole.
func (c *Codec) Decompress(b Batch, dst []byte) ([]byte, error) {
	if b.PayloadFormat() == PayloadArrow {
		return nil, fmt.Errorf("%w: batch at offset %d", ErrArrowPayload, b.BaseOffset())
	}
	switch b.Compression() {
	case CompressionNone:
		return b.Payload(), nil
	case CompressionZstd:
		if c == nil {
			return nil, pkgerr.Errorf("record", "batch at offset %d is zstd-compressed and no codec was given", b.BaseOffset())
		}
		return c.decompressZstd(b, dst)
	default:
		return nil, fmt.Errorf("%w: unknown compression %v", ErrCorruptBatch, b.Compression())
	}
}

// decompressZstd streams b's payload out of a pooled decoder into dst,
// growing dst only as output arrives and stopping one byte past the limit.
func (c *Codec) decompressZstd(b Batch, dst []byte) ([]byte, error) {
	payload := b.Payload()
	tooLarge := func(atLeast int) error {
		return &LimitError{Offset: b.BaseOffset(), AtLeastBytes: atLeast + HeaderSize, LimitBytes: c.MaxBatchBytes()}
	}
	// A frame that says up front it is too large is refused before any
	// decoding (its claim may be false the other way: the stream below
	// counts what really comes out).
	var h zstd.Header
	if err := h.Decode(payload); err == nil && h.HasFCS && h.FrameContentSize > uint64(c.maxPayloadBytes) {
		return dst, tooLarge(int(min(h.FrameContentSize, uint64(MaxBatchSize))))
	}
	dec, _ := c.decoders.Get().(*zstd.Decoder)
	if dec == nil {
		var err error
		if dec, err = c.newDecoder(); err != nil {
			return dst, err
		}
	}
	defer func() {
		_ = dec.Reset(nil) // drop the reference to payload before pooling
		c.decoders.Put(dec)
	}()
	if err := dec.Reset(bytes.NewReader(payload)); err != nil {
		return dst, fmt.Errorf("%w: zstd payload at offset %d: %v", ErrCorruptBatch, b.BaseOffset(), err)
	}
	start := len(dst)
	// One byte more than the limit tells an over-size payload from one
	// exactly at it.
	room := c.maxPayloadBytes + 1
	if want := min(len(payload)*decompressStartRatio+decompressStartSlack, room); cap(dst)-start < want {
		dst = append(make([]byte, 0, start+want), dst...)
	}
	for {
		if len(dst) == cap(dst) {
			// Double what came out so far, up to the limit.
			dst = slices.Grow(dst, max(min(len(dst)-start, room-(len(dst)-start)), 1))
		}
		n, err := dec.Read(dst[len(dst):min(cap(dst), start+room)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > c.maxPayloadBytes {
			return dst[:start], tooLarge(len(dst) - start)
		}
		switch {
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return dst[:start], fmt.Errorf("%w: zstd payload at offset %d: %v", ErrCorruptBatch, b.BaseOffset(), err)
		}
	}
}
