package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// appendRow appends the cached row of k to dst: a read of one key, the
// reference the batched read (lookupRows) is checked against.
func (c *RowCache) appendRow(dst, k []byte) ([]byte, bool) {
	sh, h := c.locate(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	row, ok := sh.lookupLocked(h, k)
	if !ok {
		return dst, false
	}
	return append(dst, row...), true
}

func openCached(t *testing.T, c *RowCache) *Store {
	t.Helper()
	return openTestStore(t, Config{Dir: t.TempDir(), RowCache: c})
}

func TestRowCacheFollowsApply(t *testing.T) {
	c := NewRowCache(1 << 20)
	s := openCached(t, c)
	apply := func(next int64, kind record.ChangeType, row string) {
		t.Helper()
		if err := s.Apply([]Change{{Key: []byte("k"), Row: []byte(row), Kind: kind}}, next); err != nil {
			t.Fatal(err)
		}
	}
	get := func() string {
		t.Helper()
		row, _, err := s.Get([]byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		return string(row.Data)
	}
	apply(1, record.Insert, "v1")
	if got := get(); got != "v1" {
		t.Fatalf("first read %q", got)
	}
	if c.Bytes() == 0 {
		t.Fatal("a read of a stored row did not fill the cache")
	}
	if got := get(); got != "v1" {
		t.Fatalf("cached read %q", got)
	}
	apply(2, record.UpdateAfter, "v2")
	if got := get(); got != "v2" {
		t.Fatalf("read after an update %q, want v2", got)
	}
	apply(3, record.Delete, "")
	if got := get(); got != "" {
		t.Fatalf("read after a delete %q, want none", got)
	}
	// Another store on the same cache never sees these keys.
	other := openCached(t, c)
	if row, ok, _ := other.Get([]byte("k")); ok {
		t.Fatalf("another store read %q through the shared cache", row.Data)
	}
}

func TestRowCacheBounded(t *testing.T) {
	c := NewRowCache(64 << 10)
	s := openCached(t, c)
	var entries []Change
	row := make([]byte, 1024)
	for i := range 1000 {
		entries = append(entries, Change{Key: fmt.Appendf(nil, "k%04d", i), Row: row, Kind: record.Insert})
	}
	if err := s.Apply(entries, 1000); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok, err := s.Get(e.Key); err != nil || !ok {
			t.Fatalf("get %s: %v %v", e.Key, ok, err)
		}
	}
	if n := c.Bytes(); n > 64<<10 {
		t.Fatalf("cache holds %d bytes, bound 64 KiB", n)
	}
}

// TestRowCacheNeverServesOlderThanApplied races readers against Apply: a
// read that starts after the store reports offset n must see the value
// written at n or later, cache or not.
func TestRowCacheNeverServesOlderThanApplied(t *testing.T) {
	raceReadsWithApply(t, openCached(t, NewRowCache(1<<20)), 3000)
}

// TestRowCacheFirstFillRacesApply repeats the race on fresh stores, whose
// Apply skips the cache until a read first fills it: that first fill must
// not leave a row Apply has already replaced.
func TestRowCacheFirstFillRacesApply(t *testing.T) {
	c := NewRowCache(1 << 20)
	for range 20 {
		raceReadsWithApply(t, openCached(t, c), 200)
	}
}

// raceReadsWithApply applies writes versions of one key while three readers
// check that no read returns a version older than the offset the store
// reported before it.
func raceReadsWithApply(t *testing.T, s *Store, writes int64) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	var stale atomic.Pointer[string]
	for range 3 {
		wg.Go(func() {
			for !done.Load() {
				applied, err := s.AppliedOffset()
				if err != nil {
					return
				}
				row, ok, err := s.Get([]byte("k"))
				if err != nil || (!ok && applied > 0) {
					msg := fmt.Sprintf("read after offset %d: %v %v", applied, ok, err)
					stale.CompareAndSwap(nil, &msg)
					return
				}
				if ok {
					if v := int64(binary.BigEndian.Uint64(row.Data)); v < applied {
						msg := fmt.Sprintf("read value %d after the store applied %d", v, applied)
						stale.CompareAndSwap(nil, &msg)
						return
					}
				}
			}
		})
	}
	for i := int64(1); i <= writes; i++ {
		row := binary.BigEndian.AppendUint64(nil, uint64(i))
		if err := s.Apply([]Change{{Key: []byte("k"), Row: row, Kind: record.UpdateAfter}}, i); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	if p := stale.Load(); p != nil {
		t.Fatal(*p)
	}
}

// TestRowCacheRingNeverServesAnotherRow puts far more rows than the ring
// holds: every hit must be the row put last for that key.
func TestRowCacheRingNeverServesAnotherRow(t *testing.T) {
	c := NewRowCache(64 << 10)
	always := func() bool { return true }
	want := map[string]string{}
	hits := 0
	for i := range 20000 {
		k := fmt.Appendf(nil, "key-%d", i%3000)
		row := fmt.Appendf(nil, "row-%d-%s", i, make([]byte, i%90))
		if i%7 == 0 {
			c.update(k, row, false) // only refreshes cached keys
		} else {
			c.put(k, row, always)
		}
		if _, ok := c.appendRow(nil, k); ok || i%7 != 0 {
			want[string(k)] = string(row)
		}
		probe := fmt.Appendf(nil, "key-%d", (i*7919)%3000)
		if got, ok := c.appendRow(nil, probe); ok {
			hits++
			if string(got) != want[string(probe)] {
				t.Fatalf("key %s: cached %q, last put %q", probe, got, want[string(probe)])
			}
		}
	}
	if hits == 0 {
		t.Fatal("no probe ever hit: the test checks nothing")
	}
	if n := c.Bytes(); n > 64<<10 {
		t.Fatalf("rings hold %d bytes, bound 64 KiB", n)
	}
	c.remove([]byte("key-1"))
	if _, ok := c.appendRow(nil, []byte("key-1")); ok {
		t.Fatal("a removed key is still cached")
	}
}

func TestRowCacheCachesWritesOnlyWhenAsked(t *testing.T) {
	c := NewRowCache(1 << 20)
	s := openCached(t, c)
	cached := func(key string) (string, bool) {
		v, ok := c.appendRow(nil, cacheKey(nil, s.cacheID, []byte(key)))
		if !ok {
			return "", false
		}
		id, row, err := splitValue(v)
		if err != nil || id != 0 {
			t.Fatalf("cached value %q of key %q: schema id %d, %v", v, key, id, err)
		}
		return string(row), ok
	}
	if err := s.Apply([]Change{{Key: []byte("a"), Row: []byte("a1"), Kind: record.Insert}}, 1); err != nil {
		t.Fatal(err)
	}
	if _, ok := cached("a"); ok {
		t.Fatal("a store that does not cache its writes cached a row no read asked for")
	}
	s.CacheWrites(true)
	if !s.CachingWrites() {
		t.Fatal("CachingWrites is off after CacheWrites(true)")
	}
	if err := s.Apply([]Change{
		{Key: []byte("b"), Row: []byte("b1"), Kind: record.Insert},
		{Key: []byte("a"), Row: []byte("a1"), Kind: record.UpdateBefore},
		{Key: []byte("a"), Row: []byte("a2"), Kind: record.UpdateAfter},
		{Key: []byte("b"), Row: []byte("b1"), Kind: record.UpdateBefore},
		{Key: []byte("b"), Row: []byte("b2"), Kind: record.UpdateAfter},
	}, 2); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"a": "a2", "b": "b2"} {
		if got, ok := cached(key); !ok || got != want {
			t.Fatalf("after a write with CacheWrites on, cache holds %q=%q (%v), want %q", key, got, ok, want)
		}
	}
	big := make([]byte, c.shardBytes) // over a quarter of a shard: never cached
	if err := s.Apply([]Change{
		{Key: []byte("a"), Kind: record.Delete},
		{Key: []byte("b"), Row: big, Kind: record.UpdateAfter},
	}, 3); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		if got, ok := cached(key); ok {
			t.Fatalf("cache still holds %q=%q after a delete or a row too large to cache", key, got)
		}
	}
	if row, ok, err := s.Get([]byte("b")); err != nil || !ok || len(row.Data) != len(big) {
		t.Fatalf("read of b after its uncacheable write: %d bytes, %v, %v", len(row.Data), ok, err)
	}
	s.CacheWrites(false)
	if err := s.Apply([]Change{{Key: []byte("c"), Row: []byte("c1"), Kind: record.Insert}}, 4); err != nil {
		t.Fatal(err)
	}
	if _, ok := cached("c"); ok {
		t.Fatal("a store that stopped caching its writes cached a new row")
	}
}

// TestRowCacheBatchAgreesWithKeyByKey churns a ring that laps many times
// and, after every few puts, reads a batch of keys (cached, lapped, never
// put, repeated) through lookupRows: each answer must be what appendRow
// gives for the key.
func TestRowCacheBatchAgreesWithKeyByKey(t *testing.T) {
	c := NewRowCache(64 << 10)
	always := func() bool { return true }
	hits, misses := 0, 0
	for i := range 6000 {
		k := fmt.Appendf(nil, "key-%d", i%1500)
		switch i % 11 {
		case 0:
			c.remove(k)
		default:
			c.put(k, fmt.Appendf(nil, "row-%d-%s", i, make([]byte, i%200)), always)
		}
		if i%13 != 0 {
			continue
		}
		b := cacheBatches.Get().(*cacheBatch)
		b.reset(40)
		for j := range b.keys {
			b.keys[j] = fmt.Appendf(nil, "key-%d", (i*31+j*7919)%1700) // some never put
		}
		b.keys[39] = b.keys[0] // a key twice in one batch
		c.lookupRows(b)
		for j, k := range b.keys {
			want, ok := c.appendRow(nil, k)
			sp := b.spans[j]
			got := b.rows[sp.at : sp.at+int(sp.n)]
			if ok != (sp.n > 0) || string(got) != string(want) {
				t.Fatalf("round %d key %s: batch %q (found %v), key by key %q (found %v)", i, k, got, sp.n > 0, want, ok)
			}
			if ok {
				hits++
			} else {
				misses++
			}
		}
		b.release()
	}
	if hits == 0 || misses == 0 {
		t.Fatalf("%d hits, %d misses: the test needs both", hits, misses)
	}
}

// TestGetBatchMixesCacheAndStore reads batches large enough for the
// batched cache read, of keys cached, stored but not cached, deleted and
// never written, in every order: each row must be the stored one.
func TestGetBatchMixesCacheAndStore(t *testing.T) {
	s := openCached(t, NewRowCache(1<<20))
	var entries []Change
	for i := range 200 {
		entries = append(entries, Change{Key: fmt.Appendf(nil, "k%03d", i), Row: fmt.Appendf(nil, "v%03d-%s", i, make([]byte, i)), Kind: record.Insert})
	}
	if err := s.Apply(entries, 200); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]Change{{Key: []byte("k007"), Kind: record.Delete}}, 201); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i += 3 { // every third key cached
		if _, _, err := s.Get(fmt.Appendf(nil, "k%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 20 {
		keys := make([][]byte, 10+round*5)
		for j := range keys {
			keys[j] = fmt.Appendf(nil, "k%03d", (round*37+j*13)%230) // past 199: never written
		}
		rows, err := s.GetBatch(keys)
		if err != nil {
			t.Fatal(err)
		}
		for j, k := range keys {
			var i int
			fmt.Sscanf(string(k), "k%03d", &i)
			want := ""
			if i < 200 && i != 7 {
				want = string(entries[i].Row)
			}
			if string(rows[j].Data) != want || (rows[j].Data == nil) != (want == "") {
				t.Fatalf("round %d key %s: %q, want %q", round, k, rows[j].Data, want)
			}
		}
	}
}

// TestRowCacheClosedStore: a read the cache could answer whole opens no
// Badger view, and must still refuse once the store is closed.
func TestRowCacheClosedStore(t *testing.T) {
	s := openCached(t, NewRowCache(1<<20))
	if err := s.Apply([]Change{{Key: []byte("k"), Row: []byte("v"), Kind: record.Insert}}, 1); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first read fills the cache, the second hits it
		if row, ok, err := s.Get([]byte("k")); err != nil || !ok || string(row.Data) != "v" {
			t.Fatalf("Get = %q %v %v", row.Data, ok, err)
		}
	}
	s.Close()
	if _, _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get of a cached row after Close = %v, want ErrClosed", err)
	}
}
