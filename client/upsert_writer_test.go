package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestUpsertRoundTrip: upserts, partial updates and deletes, read back by
// key; each step checked against the expected row.
func TestUpsertRoundTrip(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 3)
	full := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	partial := newUpsertWriter(t, tbl, UpsertWriterOptions{PartialColumns: []string{"score"}})
	l := newLookuper(t, tbl, LookuperOptions{})
	ctx := guardCtx(t)
	steps := []struct {
		name  string
		write func() (*UpsertFuture, error)
		id    int64
		want  string // "" = absent
	}{
		{"insert", func() (*UpsertFuture, error) { return full.UpsertJSON(ctx, []byte(`{"id":1,"name":"a","score":1}`)) },
			1, `{"id":1,"name":"a","score":1}`},
		{"replace", func() (*UpsertFuture, error) { return full.UpsertJSON(ctx, []byte(`{"id":1,"name":"b"}`)) },
			1, `{"id":1,"name":"b","score":null}`},
		{"partial", func() (*UpsertFuture, error) { return partial.UpsertJSON(ctx, []byte(`{"id":1,"score":7}`)) },
			1, `{"id":1,"name":"b","score":7}`},
		{"delete absent", func() (*UpsertFuture, error) { return full.DeleteJSON(ctx, []byte(`{"id":2}`)) },
			2, ""},
		{"delete", func() (*UpsertFuture, error) { return full.DeleteJSON(ctx, []byte(`{"id":1}`)) },
			1, ""},
		{"insert again", func() (*UpsertFuture, error) {
			e := tbl.NewRowEncoder()
			e.SetInt64(0, 1)
			e.SetString(1, "c")
			e.SetNull(2)
			row, err := e.Finish(nil)
			if err != nil {
				return nil, err
			}
			return full.Upsert(ctx, row)
		}, 1, `{"id":1,"name":"c","score":null}`},
	}
	for _, st := range steps {
		f, err := st.write()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if want := tbl.bucketOfID(t, st.id); res.Bucket != want {
			t.Fatalf("%s: bucket %d, want %d", st.name, res.Bucket, want)
		}
		row, found, err := l.Lookup(ctx, keyOf(t, tbl, st.id))
		if err != nil {
			t.Fatalf("%s: lookup: %v", st.name, err)
		}
		if got := rowJSON(t, tbl, row); got != st.want || found != (st.want != "") {
			t.Fatalf("%s: lookup = %q (found %v), want %q", st.name, got, found, st.want)
		}
	}
	// The changelog of id 1: +I, -U +U, -U +U, -D, +I; the absent delete a no-op.
	recs := fc.records(tbl, tbl.bucketOfID(t, 1))
	var changes string
	for _, r := range recs {
		if !r.Control {
			changes += r.Change.String() + " "
		}
	}
	if changes != "+I -U +U -U +U -D +I " {
		t.Fatalf("changelog %q", changes)
	}
}

// bucketOfID is the bucket of primary key id of kvSchema.
func (tbl *Table) bucketOfID(t testing.TB, id int64) int32 {
	bk, err := tbl.keys.keyBucket.AppendKey(nil, keyOf(t, tbl, id))
	if err != nil {
		t.Fatal(err)
	}
	return BucketOfKey(bk, tbl.Buckets())
}

// TestUpsertInvalidInput: what is refused before anything is buffered.
func TestUpsertInvalidInput(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	logTbl := openTable(t, fc, c, "log", 1)
	if _, err := logTbl.NewUpsertWriter(UpsertWriterOptions{}); !errors.Is(err, ErrNotPrimaryKeyTable) {
		t.Fatalf("upsert writer of a log table: %v", err)
	}
	if _, err := logTbl.NewLookuper(LookuperOptions{}); !errors.Is(err, ErrNotPrimaryKeyTable) {
		t.Fatalf("lookuper of a log table: %v", err)
	}
	if _, err := tbl.NewUpsertWriter(UpsertWriterOptions{PartialColumns: []string{"nope"}}); !errors.Is(err, record.ErrUnknownColumn) {
		t.Fatalf("unknown partial column: %v", err)
	}
	full := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	partial := newUpsertWriter(t, tbl, UpsertWriterOptions{PartialColumns: []string{"score"}})
	ctx := guardCtx(t)
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"full upsert missing NOT NULL", func() error { _, err := full.UpsertJSON(ctx, []byte(`{"id":1}`)); return err }, record.ErrNullNotAllowed},
		{"null key", func() error { _, err := full.UpsertJSON(ctx, []byte(`{"id":null,"name":"a"}`)); return err }, record.ErrNullNotAllowed},
		{"unknown column", func() error { _, err := full.UpsertJSON(ctx, []byte(`{"id":1,"name":"a","x":1}`)); return err }, record.ErrUnknownColumn},
		{"partial outside its columns", func() error { _, err := partial.UpsertJSON(ctx, []byte(`{"id":1,"name":"a"}`)); return err }, ErrNotTargetColumn},
		{"partial null key", func() error { _, err := partial.UpsertJSON(ctx, []byte(`{"score":1}`)); return err }, record.ErrNullNotAllowed},
		{"delete without key", func() error { _, err := full.DeleteJSON(ctx, []byte(`{"name":"a"}`)); return err }, record.ErrNullNotAllowed},
		{"upsert garbage", func() error { _, err := full.Upsert(ctx, []byte{1, 2, 3}); return err }, record.ErrInvalidRow},
		{"delete garbage", func() error { _, err := full.Delete(ctx, []byte{1}); return err }, record.ErrInvalidRow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if full.Buffered() != 0 || partial.Buffered() != 0 {
		t.Fatalf("refused rows were buffered: %d, %d", full.Buffered(), partial.Buffered())
	}
}

// TestUpsertRetriesIdempotently: a NOT_LEADER before the write and a lost
// acknowledgement after it are retried; each row applies once.
func TestUpsertRetriesIdempotently(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	proxy := fc.leaderProxy(tbl, 0)
	proxy.FailCalls(testcluster.RPCPutKV, pb.ErrorCode_ERROR_CODE_NOT_LEADER, 1)
	proxy.LoseReplies(testcluster.RPCPutKV, pb.ErrorCode_ERROR_CODE_UNAVAILABLE, 1)
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	ctx := guardCtx(t)
	for i := range 10 {
		if _, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"id":%d,"name":"n%d"}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs := fc.records(tbl, 0)
	inserts := 0
	for _, r := range recs {
		if r.Control || r.Change != record.Insert {
			t.Fatalf("unexpected record %+v", r)
		}
		inserts++
	}
	if inserts != 10 {
		t.Fatalf("%d inserts, want 10", inserts)
	}
}

// TestUpsertNotRetriable: an INVALID_RECORD answer fails the batch.
func TestUpsertNotRetriable(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	fc.leaderProxy(tbl, 0).FailCalls(testcluster.RPCPutKV, pb.ErrorCode_ERROR_CODE_INVALID_RECORD, 1)
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	ctx := guardCtx(t)
	f, err := w.UpsertJSON(ctx, []byte(`{"id":1,"name":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, transport.ErrInvalidRecord) {
		t.Fatalf("Wait: %v", err)
	}
	if err := w.Flush(ctx); !errors.Is(err, transport.ErrInvalidRecord) {
		t.Fatalf("Flush: %v", err)
	}
}
