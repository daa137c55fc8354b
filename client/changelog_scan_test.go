package client

import (
	"testing"
)

// TestScannerSkipsControlBatches: a primary-key table's log holds the
// changelog and control batches (no-ops, barriers); the scanner returns
// the changelog with its change types and moves past the control batches.
func TestScannerSkipsControlBatches(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 1)
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{Linger: -1})
	l := newLookuper(t, tbl, LookuperOptions{Linearizable: true})
	ctx := guardCtx(t)
	writes := []struct {
		del    bool
		object string
	}{
		{false, `{"id":1,"name":"a"}`},
		{true, `{"id":7}`},             // absent: a no-op batch
		{false, `{"id":1,"name":"a"}`}, // unchanged: still -U +U (the merge engine does not compare rows)
		{false, `{"id":1,"name":"b"}`},
		{true, `{"id":1}`},
	}
	for _, wr := range writes {
		var f *UpsertFuture
		var err error
		if wr.del {
			f, err = w.DeleteJSON(ctx, []byte(wr.object))
		} else {
			f, err = w.UpsertJSON(ctx, []byte(wr.object))
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Wait(ctx); err != nil { // one batch each
			t.Fatal(err)
		}
		if _, _, err := l.Lookup(ctx, keyOf(t, tbl, 1)); err != nil { // and a barrier
			t.Fatal(err)
		}
	}
	s := newScanner(t, tbl, LogScannerOptions{})
	if err := s.Subscribe(0, Earliest()); err != nil {
		t.Fatal(err)
	}
	var changes string
	for n := 0; n < 6; {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			changes += r.Change.String() + " "
		}
		n += len(recs)
	}
	if changes != "+I -U +U -U +U -D " {
		t.Fatalf("changes %q", changes)
	}
	hw := fc.highWatermark(tbl, 0)
	if hw != 6+1+5 { // 6 changes, 1 no-op, 5 barriers
		t.Fatalf("high watermark %d", hw)
	}
	if pos, ok := s.Position(0); !ok || pos != hw {
		t.Fatalf("position %d (%v) after the last control batch, want %d", pos, ok, hw)
	}
}
