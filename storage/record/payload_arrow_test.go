package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestBuildBatchMatchesBuilder(t *testing.T) {
	codec, err := NewCodec(CodecConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer codec.Close()
	for _, comp := range []Compression{CompressionNone, CompressionZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			opts := BatchOptions{SchemaID: 3, Format: PayloadRows, Compression: comp, Codec: codec,
				AppendOnly: true, HasWriter: true, WriterID: 5, Sequence: 8}
			b := NewBatchBuilder(BatchOptions{}, 0)
			for _, r := range []string{"one", "", "three"} {
				if err := b.Append(AppendOnly, []byte(r)); err != nil {
					t.Fatal(err)
				}
			}
			plain, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			payload := bytes.Clone(plain.Payload())
			b.Reset(opts, 0)
			for _, r := range []string{"one", "", "three"} {
				if err := b.Append(AppendOnly, []byte(r)); err != nil {
					t.Fatal(err)
				}
			}
			want, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte("kept")
			got, err := BuildBatch(opts, 3, payload, bytes.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("BuildBatch gives\n%x\nBatchBuilder gives\n%x", []byte(got), []byte(want))
			}
		})
	}
}

func TestBuildBatchArrow(t *testing.T) {
	// Eight records in two bytes: an Arrow payload's records need not take
	// two bytes each as rows do.
	payload := []byte{0xAB, 0xCD}
	for _, comp := range []Compression{CompressionNone, CompressionZstd, CompressionLZ4} {
		t.Run(comp.String(), func(t *testing.T) {
			b, err := BuildBatch(BatchOptions{SchemaID: 2, Format: PayloadArrow, Compression: comp, AppendOnly: true}, 8, payload, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Check(b)
			if err != nil {
				t.Fatalf("arrow batch fails its check: %v", err)
			}
			if got.PayloadFormat() != PayloadArrow || got.Compression() != comp || got.RecordCount() != 8 ||
				!bytes.Equal(got.Payload(), payload) {
				t.Fatalf("header or payload does not round trip: format %d, %v, %d records, payload %x",
					got.PayloadFormat(), got.Compression(), got.RecordCount(), got.Payload())
			}
			if _, _, err := got.Records(nil, nil); !errors.Is(err, ErrArrowPayload) {
				t.Fatalf("Records of an arrow batch: %v, want ErrArrowPayload", err)
			}
			if _, err := (*Codec)(nil).Decompress(got, nil); !errors.Is(err, ErrArrowPayload) {
				t.Fatalf("Decompress of an arrow batch: %v, want ErrArrowPayload", err)
			}
		})
	}
}

func TestBuildBatchRefuses(t *testing.T) {
	tests := []struct {
		name  string
		opts  BatchOptions
		count int32
	}{
		{"no records", BatchOptions{Format: PayloadArrow}, 0},
		{"lz4 rows", BatchOptions{Format: PayloadRows, Compression: CompressionLZ4}, 1},
		{"unknown format", BatchOptions{Format: PayloadArrow + 1}, 1},
		{"unknown compression", BatchOptions{Format: PayloadArrow, Compression: CompressionLZ4 + 1}, 1},
		{"zstd rows without codec", BatchOptions{Format: PayloadRows, Compression: CompressionZstd}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := BuildBatch(tt.opts, tt.count, []byte{0, 0}, nil); err == nil {
				t.Fatalf("built %x", []byte(b))
			}
		})
	}
}

func TestCheckHeaderLZ4OnlyForArrow(t *testing.T) {
	b, err := BuildBatch(BatchOptions{Format: PayloadArrow, Compression: CompressionLZ4}, 1, []byte{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b[attributesPos+1] = byte(PayloadRows) | byte(CompressionLZ4)<<compressionShift
	binary.BigEndian.PutUint32(b[crcPos:], b.ComputeCRC())
	if _, err := Check(b); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("lz4 row batch: %v, want ErrCorruptBatch", err)
	}
}

func TestParseCompressionLZ4(t *testing.T) {
	c, err := ParseCompression("lz4")
	if err != nil || c != CompressionLZ4 || c.String() != "lz4" {
		t.Fatalf("ParseCompression(lz4) = %v, %v", c, err)
	}
}
