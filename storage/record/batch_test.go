package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func buildBatch(t testing.TB, opts BatchOptions, records ...string) Batch {
	t.Helper()
	b := NewBatchBuilder(opts, 0)
	for i, r := range records {
		if err := b.Append(ChangeType(i%int(maxChangeType+1)), []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(batch)
}

func TestBatchRoundTrip(t *testing.T) {
	codec, err := NewCodec(CodecConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer codec.Close()
	records := []string{"a", "", "hello world", string(bytes.Repeat([]byte("x"), 300))}
	for _, comp := range []Compression{CompressionNone, CompressionZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			batch := buildBatch(t, BatchOptions{SchemaID: 7, Format: PayloadRaw, Compression: comp, Codec: codec,
				HasWriter: true, WriterID: 42, Sequence: 9}, records...)
			batch.SetBaseOffset(1000)
			batch.SetCommitTimestamp(1234567)
			batch.SetLeaderEpoch(3)
			got, err := Check(batch)
			if err != nil {
				t.Fatalf("stamped batch fails its check: %v", err)
			}
			if got.BaseOffset() != 1000 || got.LastOffset() != 1003 || got.NextOffset() != 1004 ||
				got.CommitTimestamp() != 1234567 || got.LeaderEpoch() != 3 || got.SchemaID() != 7 ||
				got.WriterID() != 42 || got.BatchSequence() != 9 || got.RecordCount() != 4 ||
				got.Compression() != comp || got.PayloadFormat() != PayloadRaw || got.AppendOnly() {
				t.Fatalf("header fields do not round trip")
			}
			it, _, err := got.Records(codec, nil)
			if err != nil {
				t.Fatal(err)
			}
			var i int
			for it.Next() {
				r := it.Record()
				if r.Offset != 1000+int64(i) || string(r.Data) != records[i] || r.Change != ChangeType(i%5) {
					t.Fatalf("record %d = %+v", i, r)
				}
				i++
			}
			if it.Err() != nil || i != len(records) {
				t.Fatalf("iterated %d records, err %v", i, it.Err())
			}
		})
	}
}

func TestBatchNoWriterDefaults(t *testing.T) {
	b := buildBatch(t, BatchOptions{AppendOnly: true}, "x")
	if b.WriterID() != NoWriterID || b.BatchSequence() != NoSequence || !b.AppendOnly() {
		t.Fatalf("writer %d seq %d appendOnly %v", b.WriterID(), b.BatchSequence(), b.AppendOnly())
	}
}

func TestBatchFull(t *testing.T) {
	b := NewBatchBuilder(BatchOptions{}, 100)
	if err := b.Append(AppendOnly, make([]byte, 200)); err != nil {
		t.Fatalf("first oversized record must still make a batch: %v", err)
	}
	if err := b.Append(AppendOnly, []byte("x")); !errors.Is(err, ErrBatchFull) {
		t.Fatalf("want ErrBatchFull, got %v", err)
	}
}

func TestCheckDetectsDamage(t *testing.T) {
	good := buildBatch(t, BatchOptions{}, "one", "two", "three")
	cases := map[string]func(b []byte) []byte{
		"flipped payload bit": func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"flipped schema id":   func(b []byte) []byte { b[schemaIDPos] ^= 0x80; return b },
		"truncated":           func(b []byte) []byte { return b[:len(b)-1] },
		"short header":        func(b []byte) []byte { return b[:HeaderSize-1] },
		"zero length":         func(b []byte) []byte { clear(b[lengthPos : lengthPos+4]); return b },
		"bad magic":           func(b []byte) []byte { b[magicPos] = 9; return b },
		"count mismatch":      func(b []byte) []byte { b[recordCountPos+3]++; return b },
		"all zeros":           func(b []byte) []byte { clear(b); return b },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Check(damage(bytes.Clone(good))); err == nil {
				t.Fatal("damaged batch passed its check")
			}
		})
	}
}

func TestBatchIterator(t *testing.T) {
	var buf []byte
	for i := range 5 {
		b := buildBatch(t, BatchOptions{}, fmt.Sprint(i), "y")
		b.SetBaseOffset(int64(2 * i))
		buf = append(buf, b...)
	}
	it := NewBatchIterator(buf, true)
	var n int
	for it.Next() {
		if it.Batch().BaseOffset() != int64(2*n) {
			t.Fatalf("batch %d at offset %d", n, it.Batch().BaseOffset())
		}
		n++
	}
	if it.Err() != nil || n != 5 {
		t.Fatalf("%d batches, err %v", n, it.Err())
	}
	buf[len(buf)-1] ^= 0xff
	it = NewBatchIterator(buf, true)
	n = 0
	for it.Next() {
		n++
	}
	if !errors.Is(it.Err(), ErrCorruptBatch) || n != 4 {
		t.Fatalf("corrupt last batch: %d batches, err %v", n, it.Err())
	}
}

func TestRecordIteratorAllocs(t *testing.T) {
	b := buildBatch(t, BatchOptions{}, "a", "b", "c", "d")
	allocs := testing.AllocsPerRun(100, func() {
		it, _, err := b.Records(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
		}
		bi := NewBatchIterator(b, true)
		for bi.Next() {
		}
	})
	if allocs != 0 {
		t.Fatalf("iterating allocates %.1f times", allocs)
	}
}

// FuzzBatchDecode feeds arbitrary bytes to the batch and record decoders: they
// must never panic, and whatever Check accepts must iterate consistently.
func FuzzBatchDecode(f *testing.F) {
	codec, err := NewCodec(CodecConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(codec.Close)
	f.Add([]byte(buildBatch(f, BatchOptions{}, "seed", "records")))
	f.Add([]byte(buildBatch(f, BatchOptions{Compression: CompressionZstd, Codec: codec}, "zstd", "seed")))
	f.Add([]byte{})
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		it := NewBatchIterator(data, true)
		for it.Next() {
			b := it.Batch()
			recs, _, err := b.Records(codec, nil)
			if err != nil {
				continue
			}
			var n int32
			for recs.Next() {
				r := recs.Record()
				if r.Offset != b.BaseOffset()+int64(n) {
					t.Fatalf("record %d has offset %d", n, r.Offset)
				}
				n++
			}
			if recs.Err() == nil && n != b.RecordCount() {
				t.Fatalf("clean iteration returned %d of %d records", n, b.RecordCount())
			}
		}
	})
}

func BenchmarkBatchIterate(b *testing.B) {
	builder := NewBatchBuilder(BatchOptions{}, 0)
	rec := bytes.Repeat([]byte("r"), 1024)
	for range 16 {
		_ = builder.Append(AppendOnly, rec)
	}
	batch, _ := builder.Build()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		it, _, _ := batch.Records(nil, nil)
		for it.Next() {
		}
	}
}

func TestWholeBatches(t *testing.T) {
	one := []byte(buildBatch(t, BatchOptions{}, "a", "bb", "ccc"))
	two := append(append([]byte(nil), one...), one...)
	tests := []struct {
		name           string
		data           []byte
		whole, partial int
	}{
		{"empty", nil, 0, 0},
		{"one", one, len(one), 0},
		{"two", two, len(two), 0},
		{"one and a header", two[:len(one)+HeaderSize], len(one), len(one)},
		{"one and less than a header", two[:len(one)+3], len(one), 0},
		{"a header only", one[:HeaderSize], 0, len(one)},
	}
	for _, tt := range tests {
		if w, p := WholeBatches(tt.data); w != tt.whole || p != tt.partial {
			t.Errorf("%s: WholeBatches = %d, %d; want %d, %d", tt.name, w, p, tt.whole, tt.partial)
		}
	}
}
