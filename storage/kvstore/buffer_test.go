package kvstore

import (
	"bytes"
	"testing"

	"github.com/floedb/floe/storage/record"
)

func TestBufferEvictKeepsNewerWrites(t *testing.T) {
	b := NewBuffer()
	b.Put([]byte("a"), Row{Data: []byte("a1")}, 10)
	b.Put([]byte("b"), Row{Data: []byte("b1")}, 11)
	b.Put([]byte("a"), Row{Data: []byte("a2")}, 12) // replaces a1
	b.Put([]byte("c"), Row{}, 13)                   // a delete
	b.Evict(12)                                     // the store holds offsets below 12
	if row, ok := b.Get([]byte("a")); !ok || string(row.Data) != "a2" {
		t.Fatalf("a after evicting below 12: %q %v; want a2, kept", row.Data, ok)
	}
	if _, ok := b.Get([]byte("b")); ok {
		t.Fatal("b was applied and should be gone")
	}
	if row, ok := b.Get([]byte("c")); !ok || row.Data != nil {
		t.Fatalf("c: %q %v; want a buffered delete", row.Data, ok)
	}
	if b.Bytes() <= 0 {
		t.Fatalf("Bytes = %d with entries buffered", b.Bytes())
	}
	b.Evict(14)
	if b.Len() != 0 || b.Bytes() != 0 {
		t.Fatalf("%d keys, %d bytes left after evicting everything", b.Len(), b.Bytes())
	}
	b.Put([]byte("d"), Row{Data: []byte("d")}, 20)
	b.Reset()
	if _, ok := b.Get([]byte("d")); ok || b.Len() != 0 {
		t.Fatal("Reset left entries")
	}
}

func TestKeysPrefixLayout(t *testing.T) {
	s, err := record.ParseSchema("a STRING NOT NULL, b BIGINT NOT NULL, v STRING")
	if err != nil {
		t.Fatal(err)
	}
	s.PrimaryKey = []string{"a", "b"}
	row := func(a string, b int64) []byte {
		enc, _ := record.NewRowEncoder(s)
		enc.SetString(0, a)
		enc.SetInt64(1, b)
		r, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain, err := NewKeys(s, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	prefixed, err := NewKeys(s, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Prefixed() || !prefixed.Prefixed() {
		t.Fatalf("Prefixed: %v %v, want false true", plain.Prefixed(), prefixed.Prefixed())
	}
	pk, err := plain.PrimaryKey(nil, row("x", 1))
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := plain.RowKey(nil, row("x", 1)); !bytes.Equal(k, pk) {
		t.Fatal("without a prefix layout the store key is the primary key")
	}
	enc, _ := record.NewRowEncoder(prefixed.BucketKeySchema())
	enc.SetString(0, "x")
	bk, _ := enc.Finish(nil)
	for _, r := range [][]byte{row("x", 1), row("x", 99)} {
		k, err := prefixed.RowKey(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(k, bk) {
			t.Fatalf("store key %x does not start with the bucket key %x", k, bk)
		}
	}
	other, _ := prefixed.RowKey(nil, row("xy", 1))
	if bytes.HasPrefix(other, bk) {
		t.Fatal("a longer bucket key matched a shorter one's prefix")
	}
}

func TestAppendChangesSkipsControlAndBeforeImages(t *testing.T) {
	s, _ := record.ParseSchema("id BIGINT NOT NULL, v STRING")
	s.PrimaryKey = []string{"id"}
	keys, err := NewKeys(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := record.NewRowEncoder(s)
	rowOf := func(id int64, v string) []byte {
		enc.Reset()
		enc.SetInt64(0, id)
		enc.SetString(1, v)
		r, _ := enc.Finish(nil)
		return r
	}
	bld := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRows}, 0)
	for _, c := range []struct {
		kind record.ChangeType
		row  []byte
	}{{record.Insert, rowOf(1, "a")}, {record.UpdateBefore, rowOf(1, "a")}, {record.UpdateAfter, rowOf(1, "b")}, {record.Delete, rowOf(1, "b")}} {
		if err := bld.Append(c.kind, c.row); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := bld.Build()
	b = bytes.Clone(b)
	record.Batch(b).SetBaseOffset(100)
	changes, err := AppendChanges(nil, b, nil, keys, 101)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Kind != record.UpdateAfter || changes[0].Offset != 102 || changes[1].Kind != record.Delete {
		t.Fatalf("changes from offset 101: %+v", changes)
	}
	ctl := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadControl}, 0)
	ctl.Append(record.AppendOnly, []byte{byte(record.ControlBarrier)})
	cb, _ := ctl.Build()
	if changes, err := AppendChanges(nil, cb, nil, keys, 0); err != nil || len(changes) != 0 {
		t.Fatalf("control batch: %v %v", changes, err)
	}
	app := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRows, AppendOnly: true}, 0)
	app.Append(record.AppendOnly, rowOf(1, "a"))
	ab, _ := app.Build()
	if _, err := AppendChanges(nil, ab, nil, keys, 0); err == nil {
		t.Fatal("an append-only batch decoded as a changelog")
	}
}
