package client

import (
	"math"
	"strconv"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// TestBucketOfKeyStable pins the bucket function: murmur3_32 with seed 0 of
// the key bytes, unsigned, modulo the bucket count. Changing it would send
// existing keys to other buckets.
func TestBucketOfKeyStable(t *testing.T) {
	if got := BucketOfKey([]byte("hello"), math.MaxInt32); got != 0x248bfa47 {
		t.Fatalf("murmur3(hello) = %#x, want 0x248bfa47", got)
	}
	s, err := record.ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	k, err := record.NewKeyEncoder(s, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id      int64
		buckets int32
		want    int32
	}{
		{0, 8, 7}, // murmur3 0xf957d08f
		{1, 8, 3}, // 0xbefbd053
		{42, 8, 3},
		{1000, 8, 0},
		{42, 1, 0},
	} {
		row, err := record.AppendRowFromJSON(nil, s, []byte(`{"id":`+strconv.FormatInt(tc.id, 10)+`,"name":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		key, err := k.AppendKey(nil, row)
		if err != nil {
			t.Fatal(err)
		}
		if got := BucketOfKey(key, tc.buckets); got != tc.want {
			t.Errorf("id %d, %d buckets: bucket %d, want %d", tc.id, tc.buckets, got, tc.want)
		}
	}
}

// TestTableBucketOf: rows with the same bucket key share a bucket whatever
// their other columns, and the key router agrees with Table.BucketOf.
func TestTableBucketOf(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "keyed", 8, "id")
	r := &keyRouter{key: tbl.bucketKey, buckets: tbl.Buckets()}
	for _, name := range []string{"a", "a much longer name than seven bytes", ""} {
		row := testRow(t, tbl, 42, name)
		b, err := tbl.BucketOf(row)
		if err != nil || b != 3 {
			t.Fatalf("BucketOf(id 42, %q) = %d, %v; want 3", name, b, err)
		}
		if rb, _ := r.route(row, 0); rb != b {
			t.Fatalf("router sends id 42 to %d, BucketOf says %d", rb, b)
		}
	}
	plain := openTable(t, fc, c, "plain", 3)
	if _, err := plain.BucketOf(testRow(t, plain, 1, "x")); err == nil {
		t.Fatal("BucketOf of a table without a bucket key succeeded")
	}
}

// TestStickyRouterRotates: a bucket takes rows until they fill a batch, then
// the next bucket does, round robin.
func TestStickyRouterRotates(t *testing.T) {
	const recordBytes = 30
	r := newStickyRouter(3, 1, record.HeaderSize+100) // 3 records of 30 fill a batch
	var got []int32
	for range 12 {
		b, err := r.route(nil, recordBytes)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	want := []int32{1, 1, 1, 2, 2, 2, 0, 0, 0, 1, 1, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("buckets %v, want %v", got, want)
		}
	}
	// A record larger than a batch takes a bucket of its own.
	r = newStickyRouter(2, 0, record.HeaderSize+100)
	for i, want := range []int32{0, 1, 0} {
		if b, _ := r.route(nil, 500); b != want {
			t.Fatalf("big record %d went to bucket %d, want %d", i, b, want)
		}
	}
}
