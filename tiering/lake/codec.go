package lake

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// zstdCodec is the process's Parquet zstd codec (registered over
// arrow-go's own, compress.RegisterCodec's intended use): one encoder per
// level shared by every writer, and frames without checksums. arrow-go's
// codec hashes every page twice over (a frame checksum written, one
// checked on reads) and entropy-codes every literal; on a round's pages
// that was a sixth of its time. What a data file holds is checked as a
// whole where it is stored (the object store's checksums) and, by engines,
// through its pages' structure; frames written with checksums (by other
// writers) are still read, their checksums not checked.
type zstdCodec struct{}

var zstdCodecs struct {
	sync.Mutex
	byLevel map[zstd.EncoderLevel]*zstd.Encoder
	dec     *zstd.Decoder
}

func init() {
	compress.RegisterCodec(compress.Codecs.Zstd, zstdCodec{})
}

func zstdEncoder(level zstd.EncoderLevel) *zstd.Encoder {
	zstdCodecs.Lock()
	defer zstdCodecs.Unlock()
	if enc := zstdCodecs.byLevel[level]; enc != nil {
		return enc
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(fmt.Sprintf("lake: zstd encoder options: %v", err)) // fixed options: a programming error
	}
	if zstdCodecs.byLevel == nil {
		zstdCodecs.byLevel = map[zstd.EncoderLevel]*zstd.Encoder{}
	}
	zstdCodecs.byLevel[level] = enc
	return enc
}

func zstdDecoder() *zstd.Decoder {
	zstdCodecs.Lock()
	defer zstdCodecs.Unlock()
	if zstdCodecs.dec == nil {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)), zstd.IgnoreChecksum(true))
		if err != nil {
			panic(fmt.Sprintf("lake: zstd decoder options: %v", err))
		}
		zstdCodecs.dec = dec
	}
	return zstdCodecs.dec
}

func levelOf(level int) zstd.EncoderLevel {
	if level == compress.DefaultCompressionLevel {
		return zstd.SpeedDefault
	}
	return zstd.EncoderLevelFromZstd(level)
}

func (zstdCodec) Encode(dst, src []byte) []byte {
	return zstdEncoder(zstd.SpeedDefault).EncodeAll(src, dst[:0])
}

func (zstdCodec) EncodeLevel(dst, src []byte, level int) []byte {
	return zstdEncoder(levelOf(level)).EncodeAll(src, dst[:0])
}

func (c zstdCodec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err) // the Codec interface's way; arrow-go calls DecodeWithError
	}
	return out
}

func (zstdCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	return zstdDecoder().DecodeAll(src, dst[:0])
}

// CompressBound is zstd's ZSTD_COMPRESSBOUND.
func (zstdCodec) CompressBound(n int64) int64 {
	extra := int64(0)
	if n < 128<<10 {
		extra = ((128 << 10) - n) >> 11
	}
	return n + n>>8 + extra
}

func (zstdCodec) NewReader(r io.Reader) io.ReadCloser {
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.IgnoreChecksum(true))
	if err != nil {
		return io.NopCloser(errReader{err})
	}
	return dec.IOReadCloser()
}

func (zstdCodec) NewWriter(w io.Writer) io.WriteCloser {
	enc, _ := zstd.NewWriter(w, zstd.WithEncoderCRC(false))
	return enc
}

func (zstdCodec) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return zstd.NewWriter(w, zstd.WithEncoderLevel(levelOf(level)), zstd.WithEncoderCRC(false))
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
