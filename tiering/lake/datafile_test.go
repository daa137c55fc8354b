package lake_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering/lake"
)

// TestFileBuilderChoosesEncodings: a file's first rows pick its columns'
// encodings: a dictionary for repeated values and none for mostly
// distinct ones (delta-encoded when they are integers), zstd for what
// compresses and nothing for random bytes; the offsets and timestamps are
// delta-encoded, and so is the bucket (one a file). The file reads back.
func TestFileBuilderChoosesEncodings(t *testing.T) {
	s, err := record.ParseSchema("id BIGINT NOT NULL, country STRING, blob BYTES, doc STRING")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := lake.NewSchema(0, s, nil, new(int))
	if err != nil {
		t.Fatal(err)
	}
	fb, err := lake.NewFileBuilder(s, ls)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := record.NewRowEncoder(s)
	const rows = 5000
	for i := range rows {
		blob := make([]byte, 200)
		_, _ = rand.Read(blob)
		enc.SetInt64(0, int64(i))
		enc.SetString(1, []string{"de", "fr", "nl"}[i%3])
		enc.SetBytes(2, blob)
		enc.SetString(3, fmt.Sprintf(`{"event":"click","user":%d,"page":"/products/%d"}`, i, i%97))
		row, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := fb.Append(row, 0, int64(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	body, df, err := fb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if df.RecordCount != rows {
		t.Fatalf("%d records in the file, want %d", df.RecordCount, rows)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		dictionary bool
		codec      compress.Compression
	}{
		"country": {true, compress.Codecs.Zstd},
		"blob":    {false, compress.Codecs.Uncompressed},
		"doc":     {false, compress.Codecs.Zstd},
	}
	rg := pf.MetaData().RowGroup(0)
	for c := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		name := cc.PathInSchema().String()
		if name == lake.OffsetColumn || name == lake.TimestampColumn || name == lake.BucketColumn || name == "id" {
			if !hasEncoding(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked) || cc.HasDictionaryPage() {
				t.Errorf("%s: encodings %v, dictionary %v: want delta-encoded", name, cc.Encodings(), cc.HasDictionaryPage())
			}
			continue
		}
		w, ok := want[name]
		if !ok {
			continue
		}
		if cc.HasDictionaryPage() != w.dictionary || cc.Compression() != w.codec {
			t.Errorf("%s: dictionary %v, %v; want dictionary %v, %v", name, cc.HasDictionaryPage(), cc.Compression(), w.dictionary, w.codec)
		}
	}
	// And it reads back as the rows it holds.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Release()
	var sum int64
	var countries []string
	for _, chunk := range tb.Column(0).Data().Chunks() {
		for i := range chunk.Len() {
			sum += chunk.(*array.Int64).Value(i)
		}
	}
	for _, chunk := range tb.Column(1).Data().Chunks() {
		for i := range min(chunk.Len(), 4) {
			countries = append(countries, chunk.ValueStr(i))
		}
	}
	if tb.NumRows() != rows || sum != rows*(rows-1)/2 || fmt.Sprint(countries) != "[de fr nl de]" {
		t.Fatalf("the file reads back %d rows, ids summing to %d, countries %v", tb.NumRows(), sum, countries)
	}
}

func hasEncoding(encs []parquet.Encoding, e parquet.Encoding) bool {
	for _, x := range encs {
		if x == e {
			return true
		}
	}
	return false
}
