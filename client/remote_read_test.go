package client

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// TestReadRemoteFromOffsetPastThePosition: the position a leader hands
// out comes from a sparse index and may name batches before the offset
// the scanner asked for; readRemote reads past them and returns the batch
// holding the offset, even with a budget of one batch (a scanner given
// the earlier batch again and again would never move on).
func TestReadRemoteFromOffsetPastThePosition(t *testing.T) {
	var segment []byte
	var starts []int64 // byte position of each batch
	for i := range int64(6) {
		b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw, AppendOnly: true}, 0)
		if err := b.Append(record.AppendOnly, bytes.Repeat([]byte{byte(i)}, 100+int(i)*50)); err != nil {
			t.Fatal(err)
		}
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		batch.SetBaseOffset(10 + i)
		starts = append(starts, int64(len(segment)))
		segment = append(segment, batch...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "segment", time.Time{}, bytes.NewReader(segment))
	}))
	defer srv.Close()
	ref := &pb.RemoteSegmentRef{Url: srv.URL, Position: 0, Bytes: int64(len(segment)), BaseOffset: 10, NextOffset: 16}
	for off := int64(10); off < 16; off++ {
		data, err := readRemote(t.Context(), srv.Client(), ref, off, 1)
		if err != nil {
			t.Fatal(err)
		}
		if b := record.Batch(data); b.BaseOffset() != off || len(data) != len(b) {
			t.Fatalf("offset %d: read batch at %d, %d bytes of %d", off, b.BaseOffset(), len(b), len(data))
		}
	}
	ref.Position = starts[2]
	if data, err := readRemote(t.Context(), srv.Client(), ref, 14, 1<<20); err != nil || record.Batch(data).BaseOffset() != 14 ||
		int64(len(data)) != int64(len(segment))-starts[4] {
		t.Fatalf("offset 14 from batch 12 with room for all: %d bytes, %v", len(data), err)
	}
	if _, err := readRemote(t.Context(), srv.Client(), ref, 16, 1); err == nil {
		t.Fatal("an offset past the segment read something")
	}
}
