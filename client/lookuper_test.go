package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// upsertIDs writes rows id from..to-1 of kvSchema and waits for them.
func upsertIDs(t *testing.T, tbl *Table, from, to int) {
	t.Helper()
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	ctx := guardCtx(t)
	for i := from; i < to; i++ {
		if _, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"id":%d,"name":"n%d","score":%d}`, i, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLookupCoalesces: while a bucket's requests are in flight, the keys
// of many callers queue and go out together.
func TestLookupCoalesces(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	upsertIDs(t, tbl, 0, 200)
	l := newLookuper(t, tbl, LookuperOptions{MaxBatchKeys: 64})
	ctx := guardCtx(t)
	proxy := fc.leaderProxy(tbl, 0)
	lookups := func() int { return proxy.Calls(testcluster.RPCLookup) }
	before := lookups()
	release := proxy.Hold(testcluster.RPCLookup, testcluster.FromClients)
	defer release()
	const callers = 200
	errs := make(chan error, callers)
	lookup := func(id int) {
		row, found, err := l.Lookup(ctx, keyOf(t, tbl, int64(id)))
		switch {
		case err != nil:
			errs <- err
		case !found || record.NewRowView(tbl.schema, row).Int64(0) != int64(id):
			errs <- fmt.Errorf("key %d: found %v, row %q", id, found, rowJSON(t, tbl, row))
		default:
			errs <- nil
		}
	}
	var wg sync.WaitGroup
	for id := range lookupsInFlightPerBucket {
		wg.Go(func() { lookup(id) })
	}
	waitFor(t, "the first requests", func() bool { return lookups()-before == lookupsInFlightPerBucket })
	for id := lookupsInFlightPerBucket; id < callers; id++ {
		wg.Go(func() { lookup(id) })
	}
	q := l.queues[0]
	waitFor(t, "the callers to queue", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.waiting) == callers-lookupsInFlightPerBucket
	})
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// 4 single keys, then 196 keys in requests of at most 64.
	if got, want := lookups()-before, lookupsInFlightPerBucket+4; got != want {
		t.Fatalf("%d requests for %d callers, want %d", got, callers, want)
	}
}

// TestLookupAloneEndsWithItsCaller: a caller whose key goes out alone
// sends it itself; its context's end, or Close, still ends its wait, and
// the lookuper serves the next caller.
func TestLookupAloneEndsWithItsCaller(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	upsertIDs(t, tbl, 0, 3)
	l := newLookuper(t, tbl, LookuperOptions{})
	guard := guardCtx(t)
	proxy := fc.leaderProxy(tbl, 0)
	before := proxy.Calls(testcluster.RPCLookup)
	// heldLookup starts a lookup of key 1 under ctx and waits until the
	// server holds its request, the requests'th.
	heldLookup := func(ctx context.Context, requests int) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := l.Lookup(ctx, keyOf(t, tbl, 1))
			done <- err
		}()
		waitFor(t, "the request", func() bool { return proxy.Calls(testcluster.RPCLookup)-before == requests })
		return done
	}
	// ended waits for done's error and checks it is want.
	ended := func(done <-chan error, want error, what string) {
		t.Helper()
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Fatalf("lookup %s: %v, want %v", what, err, want)
			}
		case <-guard.Done():
			t.Fatalf("a lookup held by the server did not end %s", what)
		}
	}

	release := proxy.Hold(testcluster.RPCLookup, testcluster.FromClients)
	ctx, cancel := context.WithCancel(guard)
	done := heldLookup(ctx, 1)
	cancel()
	ended(done, context.Canceled, "with its caller's context")
	release()
	if _, found, err := l.Lookup(guard, keyOf(t, tbl, 2)); err != nil || !found {
		t.Fatalf("the next lookup: found %v, %v", found, err)
	}

	release = proxy.Hold(testcluster.RPCLookup, testcluster.FromClients)
	defer release()
	done = heldLookup(guard, 3)
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	ended(done, ErrLookuperClosed, "at Close")
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestLookupRetries: retriable errors are retried after a refresh; others
// are returned.
func TestLookupRetries(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "kv", kvSchema, 1, 2)
	upsertIDs(t, tbl, 0, 3)
	l := newLookuper(t, tbl, LookuperOptions{})
	ctx := guardCtx(t)
	proxy := fc.leaderProxy(tbl, 0)
	proxy.FailCalls(testcluster.RPCLookup, pb.ErrorCode_ERROR_CODE_NOT_LEADER, 1)
	proxy.FailCalls(testcluster.RPCLookup, pb.ErrorCode_ERROR_CODE_UNAVAILABLE, 1)
	if _, found, err := l.Lookup(ctx, keyOf(t, tbl, 1)); err != nil || !found {
		t.Fatalf("after retriable errors: found %v, %v", found, err)
	}
	// The leader moves: the lookuper follows it.
	leader := fc.moveLeader(tbl, 0)
	rows, err := l.LookupBatch(ctx, [][]byte{keyOf(t, tbl, 2), keyOf(t, tbl, 9)})
	if err != nil || rows[0] == nil || rows[1] != nil {
		t.Fatalf("batch after a leader move: %d rows, %v", len(rows), err)
	}
	leader.Proxy().FailCalls(testcluster.RPCLookup, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, 1)
	if _, _, err := l.Lookup(ctx, keyOf(t, tbl, 1)); err == nil {
		t.Fatal("INVALID_REQUEST not returned")
	}
}

// TestLookupBatchAndJSON: LookupBatch over several buckets, LookupJSON, and
// the keys refused.
func TestLookupBatchAndJSON(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 5)
	upsertIDs(t, tbl, 0, 100)
	l := newLookuper(t, tbl, LookuperOptions{MaxBatchKeys: 7, Linearizable: true})
	ctx := guardCtx(t)
	var keys [][]byte
	for id := range 150 {
		keys = append(keys, keyOf(t, tbl, int64(id)))
	}
	rows, err := l.LookupBatch(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for id, row := range rows {
		if (row != nil) != (id < 100) || (row != nil && record.NewRowView(tbl.schema, row).Int64(0) != int64(id)) {
			t.Fatalf("key %d: %q", id, rowJSON(t, tbl, row))
		}
	}
	row, found, err := l.LookupJSON(ctx, []byte(`{"id":42}`))
	if err != nil || !found || rowJSON(t, tbl, row) != `{"id":42,"name":"n42","score":42}` {
		t.Fatalf("LookupJSON: %q %v %v", rowJSON(t, tbl, row), found, err)
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"extra column", func() error { _, _, err := l.LookupJSON(ctx, []byte(`{"id":1,"name":"x"}`)); return err }, record.ErrUnknownColumn},
		{"no key", func() error { _, _, err := l.LookupJSON(ctx, []byte(`{}`)); return err }, record.ErrNullNotAllowed},
		{"bad JSON", func() error { _, _, err := l.LookupJSON(ctx, []byte(`{"id":`)); return err }, record.ErrInvalidJSON},
		{"bad key", func() error { _, _, err := l.Lookup(ctx, []byte{1, 2}); return err }, record.ErrInvalidRow},
		{"bad key in batch", func() error { _, err := l.LookupBatch(ctx, [][]byte{keys[0], {1}}); return err }, record.ErrInvalidRow},
		{"no prefix lookup", func() error { _, err := l.PrefixLookupJSON(ctx, []byte(`{"id":1}`)); return err }, ErrNoPrefixLookup},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Lookup(ctx, keys[0]); !errors.Is(err, ErrLookuperClosed) {
		t.Fatalf("Lookup after Close: %v", err)
	}
}

// TestPrefixLookup: the rows of one bucket-key value, in key order.
func TestPrefixLookup(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "orders", "user BIGINT NOT NULL, seq INT NOT NULL, item STRING, PRIMARY KEY (user, seq)", 4, "user")
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	ctx := guardCtx(t)
	for user := range 3 {
		for seq := 3; seq > 0; seq-- {
			if _, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"user":%d,"seq":%d,"item":"i%d"}`, user, seq, seq)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	l := newLookuper(t, tbl, LookuperOptions{})
	rows, err := l.PrefixLookupJSON(ctx, []byte(`{"user":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, row := range rows {
		v := record.NewRowView(tbl.schema, row)
		if v.Int64(0) != 1 {
			t.Fatalf("row of user %d", v.Int64(0))
		}
		seqs = append(seqs, v.Int64(1))
	}
	if !slices.Equal(seqs, []int64{1, 2, 3}) {
		t.Fatalf("seqs %v", seqs)
	}
	if _, err := l.PrefixLookupJSON(ctx, []byte(`{"user":1,"seq":1}`)); !errors.Is(err, record.ErrUnknownColumn) {
		t.Fatalf("prefix with a non-bucket-key column: %v", err)
	}
}

// TestLookupBatchSplitsLargeAnswers: rows that together pass what one
// lookup answer may carry are asked for in halves; before, the node's
// TOO_LARGE failed every key of the batch.
func TestLookupBatchSplitsLargeAnswers(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	ctx := guardCtx(t)
	name := strings.Repeat("n", 1<<20-1<<10)
	const ids = 20 // about 20 MiB of rows, over the 15 MiB of one answer
	for i := range ids {
		if _, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"id":%d,"name":%q,"score":%d}`, i, name, i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l := newLookuper(t, tbl, LookuperOptions{MaxBatchKeys: 64})
	var keys [][]byte
	for id := range ids {
		keys = append(keys, keyOf(t, tbl, int64(id)))
	}
	rows, err := l.LookupBatch(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for id, row := range rows {
		if row == nil || record.NewRowView(tbl.schema, row).Int64(0) != int64(id) {
			t.Fatalf("key %d: no row or another's", id)
		}
	}
}
