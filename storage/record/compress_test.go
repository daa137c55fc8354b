package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zstdBatch wraps payload, taken as zstd-compressed, in a one-record batch
// with a valid CRC: what a client could send, whatever payload holds.
func zstdBatch(payload []byte) Batch {
	b := make(Batch, HeaderSize+len(payload))
	copy(b[HeaderSize:], payload)
	binary.BigEndian.PutUint32(b[lengthPos:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint16(b[attributesPos:], uint16(PayloadRaw)|uint16(CompressionZstd)<<compressionShift)
	binary.BigEndian.PutUint64(b[writerIDPos:], uint64(NoWriterID&0xffffffffffffffff))
	binary.BigEndian.PutUint32(b[batchSequencePos:], uint32(NoSequence&0xffffffff))
	binary.BigEndian.PutUint32(b[recordCountPos:], 1)
	binary.BigEndian.PutUint32(b[crcPos:], crc32.Checksum(b[crcStart:], castagnoli))
	return b
}

// rleFrame is a zstd frame of n RLE blocks of 128 KiB of zeros each: 4
// bytes of input per 128 KiB of output. With claimSize it says its content
// size (n × 128 KiB) in its header; without, a decoder only learns the size
// by decoding.
func rleFrame(n int, claimSize bool) []byte {
	const block = 128 << 10
	out := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if claimSize {
		// Frame content size in 8 bytes (flag 3), window descriptor kept.
		out = append(out, 0xc0, 0x38)
		out = binary.LittleEndian.AppendUint64(out, uint64(n)*block)
	} else {
		out = append(out, 0x00, 0x38) // no content size; a 128 KiB window
	}
	for i := range n {
		h := uint32(1<<1 | block<<3) // RLE block of 128 KiB
		if i == n-1 {
			h |= 1 // last block
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return out
}

// allocatedBy returns the bytes fn allocated on the heap.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestDecompressBoundedByLimit(t *testing.T) {
	const limit = 1 << 20
	codec, err := NewCodec(CodecConfig{MaxBatchBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer codec.Close()
	for _, tc := range []struct {
		name   string
		blocks int
		claim  bool
	}{
		// 256 MiB of output from 8 KiB of input: the stream is cut at
		// the limit.
		{"inflates without a claimed size", 2048, false},
		// The claim alone (1 GiB) is refused before decoding.
		{"claims 1 GiB", 8192, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := zstdBatch(rleFrame(tc.blocks, tc.claim))
			var out []byte
			var derr error
			alloc := allocatedBy(func() { out, derr = codec.Decompress(b, nil) })
			var le *LimitError
			if !errors.As(derr, &le) || !errors.Is(derr, ErrDecompressedTooLarge) {
				t.Fatalf("Decompress = %d bytes, %v; want a *LimitError", len(out), derr)
			}
			if le.LimitBytes != limit || le.AtLeastBytes <= limit {
				t.Fatalf("LimitError %+v: want the %d-byte limit and a size above it", le, limit)
			}
			// The output buffer, the decoder's window and its pooled
			// buffers: a few times the limit, not the payload's size.
			if alloc > 8*limit {
				t.Fatalf("refusing the payload allocated %d bytes, more than 8 × the %d-byte limit", alloc, limit)
			}
		})
	}
	t.Run("at the limit", func(t *testing.T) {
		// 7 blocks (896 KiB) fit a 1 MiB batch with its header.
		out, err := codec.Decompress(zstdBatch(rleFrame(7, false)), nil)
		if err != nil || len(out) != 7<<17 || !bytes.Equal(out, make([]byte, 7<<17)) {
			t.Fatalf("Decompress = %d bytes, %v; want 7 blocks of zeros", len(out), err)
		}
	})
}

// FuzzDecompress feeds arbitrary zstd payloads to a codec limited to 64 KiB:
// it must never panic, never hand back more than the limit nor a buffer
// much larger, and agree with an unlimited decoder on what fits.
func FuzzDecompress(f *testing.F) {
	const limit = 64 << 10
	codec, err := NewCodec(CodecConfig{MaxBatchBytes: limit})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(codec.Close)
	ref, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(decoderWindowBytes), zstd.WithDecoderMaxWindow(decoderWindowBytes))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(ref.Close)
	f.Add(codec.enc.EncodeAll([]byte("a small payload, compressed"), nil))
	f.Add(codec.enc.EncodeAll(bytes.Repeat([]byte("row "), 100<<10), nil))
	f.Add(rleFrame(1, false))
	f.Add(rleFrame(3, true))
	f.Add(rleFrame(40, false))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := codec.Decompress(zstdBatch(payload), nil)
		if len(out) > limit-HeaderSize || cap(out) > 2*limit+len(payload)*decompressStartRatio+decompressStartSlack {
			t.Fatalf("output of %d bytes (capacity %d) past the %d-byte limit", len(out), cap(out), limit)
		}
		want, refErr := ref.DecodeAll(payload, nil)
		switch {
		case refErr == nil && len(want) <= limit-HeaderSize:
			if err != nil || !bytes.Equal(out, want) {
				t.Fatalf("Decompress = %d bytes, %v; an unlimited decoder gives %d bytes", len(out), err, len(want))
			}
		case refErr == nil:
			if !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("a payload of %d bytes decompressed: %d bytes, %v; want ErrDecompressedTooLarge", len(want), len(out), err)
			}
		case err == nil && len(out) > 0:
			// The reference's own memory limit or a frame it refuses
			// that streams cleanly: nothing to compare.
		}
	})
}
