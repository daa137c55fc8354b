package record

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Codec compresses and decompresses batch payloads. It is safe for
// concurrent use; share one per process.
type Codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// NewCodec returns a codec whose decoder refuses payloads that would expand
// past MaxBatchSize.
func NewCodec() (*Codec, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true))
	if err != nil {
		return nil, fmt.Errorf("record: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxBatchSize),
		zstd.WithDecoderMaxWindow(MaxBatchSize))
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("record: zstd decoder: %w", err)
	}
	return &Codec{enc: enc, dec: dec}, nil
}

// Close releases the codec's resources.
func (c *Codec) Close() {
	c.enc.Close()
	c.dec.Close()
}

func (c *Codec) compress(comp Compression, dst, src []byte) ([]byte, error) {
	switch comp {
	case CompressionZstd:
		return c.enc.EncodeAll(src, dst), nil
	default:
		return nil, fmt.Errorf("record: cannot compress with %v", comp)
	}
}

// Decompress appends the decompressed payload of b to dst. For an
// uncompressed batch it returns the payload itself without copying.
func (c *Codec) Decompress(b Batch, dst []byte) ([]byte, error) {
	switch b.Compression() {
	case CompressionNone:
		return b.Payload(), nil
	case CompressionZstd:
		if c == nil {
			return nil, fmt.Errorf("record: batch at offset %d is zstd-compressed and no codec was given", b.BaseOffset())
		}
		out, err := c.dec.DecodeAll(b.Payload(), dst)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd payload at offset %d: %v", ErrCorruptBatch, b.BaseOffset(), err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: unknown compression %v", ErrCorruptBatch, b.Compression())
	}
}
