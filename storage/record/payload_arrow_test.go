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

// TestProjectBatch: a projected batch keeps every header field of its
// source but the length, the CRC and the projected bit, and passes Check;
// the bit is refused on anything but an Arrow batch.
func TestProjectBatch(t *testing.T) {
	opts := BatchOptions{SchemaID: 2, Format: PayloadArrow, Compression: CompressionLZ4, AppendOnly: true,
		HasWriter: true, WriterID: 9, Sequence: 4}
	src, err := BuildBatch(opts, 3, []byte("the whole arrow payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	src.SetBaseOffset(100)
	src.SetCommitTimestamp(1234)
	src.SetLeaderEpoch(7)
	got, err := ProjectBatch(src, []byte("cut"), []byte("prefix"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(got); err != nil {
		t.Fatalf("projected batch fails Check: %v", err)
	}
	if !got.Projected() || src.Projected() {
		t.Fatalf("projected bit: source %v, projected %v", src.Projected(), got.Projected())
	}
	if string(got.Payload()) != "cut" || got.Size() != HeaderSize+3 {
		t.Fatalf("payload %q, size %d", got.Payload(), got.Size())
	}
	if got.BaseOffset() != 100 || got.CommitTimestamp() != 1234 || got.LeaderEpoch() != 7 || got.SchemaID() != 2 ||
		got.WriterID() != 9 || got.BatchSequence() != 4 || got.RecordCount() != 3 || !got.AppendOnly() ||
		got.Compression() != CompressionLZ4 || got.PayloadFormat() != PayloadArrow {
		t.Fatalf("header fields changed: %x", got[:HeaderSize])
	}
	rows, err := BuildBatch(BatchOptions{Format: PayloadRows}, 1, []byte{byte(AppendOnly), 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProjectBatch(rows, nil, nil); err == nil {
		t.Fatal("projected a row batch")
	}
	binary.BigEndian.PutUint16(rows[attributesPos:], rows.Attributes()|projectedBit)
	binary.BigEndian.PutUint32(rows[crcPos:], rows.ComputeCRC())
	if _, err := Check(rows); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("a row batch with the projected bit: %v", err)
	}
}
