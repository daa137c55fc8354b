package kvstore

import (
	"encoding/binary"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// rowCacheShards spreads the cache's lock; a power of two.
const rowCacheShards = 32

// entryHeaderBytes precede every cached entry: key length, row length.
const entryHeaderBytes = 8

// RowCache keeps recently read rows of every Store of a node in memory, in
// front of Badger: a point read that hits it costs a map lookup and a copy
// instead of an LSM search and a value-log read.
//
// It holds no pointers the garbage collector would walk, however many rows
// it keeps: each shard is one ring of bytes, entries (key and row) are
// appended to it, and an index maps the 64-bit hash of a key to the
// entry's position. The rings are mapped outside the Go heap, on a shard's
// first fill, and the kernel backs their pages as they are written: a
// cache of gigabytes neither raises the garbage collector's heap goal (which
// would let other garbage grow as large) nor costs memory before it fills. Old entries are overwritten as the ring turns (first
// in, first out); a hash collision replaces the other key's entry; a read
// checks the key bytes, so neither is ever served for the wrong key.
//
// Stores keep it coherent: Apply refreshes the cached keys it writes (new
// row, or gone) after they commit, and a read only fills the cache if no
// Apply committed since the read began (see Store.fill). Keys that are not
// cached stay out, unless the store caches its writes (Store.CacheWrites,
// which a bucket's leader turns on). A nil *RowCache is a disabled cache.
type RowCache struct {
	shardBytes uint64
	seed       maphash.Seed
	nextStore  atomic.Uint64
	shards     [rowCacheShards]rowCacheShard
	// rings owns the shards' mapped rings; a cleanup unmaps them once the
	// cache is unreachable.
	rings *ringMaps
}

// ringMaps holds the mapped rings of a cache's shards.
type ringMaps struct {
	mu    sync.Mutex
	rings [][]byte
}

// newRing maps size bytes of zeroed, private anonymous memory, reserving
// no swap for it (pages exist only once written), or falls back to the Go
// heap if the kernel refuses.
func (m *ringMaps) newRing(size uint64) []byte {
	ring, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_NORESERVE)
	if err != nil {
		return make([]byte, size)
	}
	m.mu.Lock()
	m.rings = append(m.rings, ring)
	m.mu.Unlock()
	return ring
}

// unmap releases every mapped ring; the cache is unreachable by then.
func (m *ringMaps) unmap() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.rings {
		_ = unix.Munmap(r) // nothing else to do with an error at this point
	}
	m.rings = nil
}

type rowCacheShard struct {
	mu    sync.Mutex
	index rowIndex // key hash → absolute position of its entry
	ring  []byte   // mapped on the first fill
	head  uint64   // absolute position of the next entry
}

// NewRowCache returns a cache of at most max(maxBytes, 32 KiB) bytes of
// rings (nil when maxBytes ≤ 0); a row larger than a quarter of a ring
// (maxBytes/128) is never cached.
func NewRowCache(maxBytes int64) *RowCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &RowCache{shardBytes: uint64(max(maxBytes/rowCacheShards, 1024)), seed: maphash.MakeSeed(), rings: &ringMaps{}}
	runtime.AddCleanup(c, (*ringMaps).unmap, c.rings)
	return c
}

// Bytes is the memory the cache's rings hold.
func (c *RowCache) Bytes() int64 {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += int64(len(sh.ring))
		sh.mu.Unlock()
	}
	return n
}

// storeID returns a fresh id for a Store's keys: a reopened or rebuilt
// store never sees its predecessor's entries, which age out.
func (c *RowCache) storeID() uint64 { return c.nextStore.Add(1) }

// cacheKey is the store id followed by the store key.
func cacheKey(dst []byte, store uint64, key []byte) []byte {
	return appendCacheKey(dst[:0], store, key)
}

// appendCacheKey appends the cache key of key in store to dst.
func appendCacheKey(dst []byte, store uint64, key []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, store)
	return append(dst, key...)
}

func (c *RowCache) locate(k []byte) (*rowCacheShard, uint64) {
	shard, h := c.split(k)
	return &c.shards[shard], h
}

// split returns the shard of k and its hash in the shard's index: the low
// bits of k's hash choose the shard, the others make the slot hash.
func (c *RowCache) split(k []byte) (shard uint8, h uint64) {
	full := maphash.Bytes(c.seed, k)
	return uint8(full & (rowCacheShards - 1)), slotHash(full >> 5)
}

// put caches row under k if still() holds, checked under the shard's lock.
func (c *RowCache) put(k, row []byte, still func() bool) {
	if !c.fits(k, row) {
		return
	}
	sh, h := c.locate(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if still() {
		c.appendLocked(sh, h, k, row)
	}
}

// update gives k the cached row row, or drops k for a nil row or one too
// large to cache. Unless add is set, a key that is not cached stays out.
func (c *RowCache) update(k, row []byte, add bool) {
	sh, h := c.locate(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !add {
		if _, ok := sh.lookupLocked(h, k); !ok {
			return
		}
	}
	if row != nil && c.fits(k, row) {
		c.appendLocked(sh, h, k, row) // repoints k's index entry at the new copy
		return
	}
	sh.index.remove(h)
}

// remove drops k.
func (c *RowCache) remove(k []byte) { c.update(k, nil, false) }

// fits reports whether an entry of k and row may be cached: at most a
// quarter of a shard.
func (c *RowCache) fits(k, row []byte) bool {
	return uint64(entryHeaderBytes+len(k)+len(row)) <= c.shardBytes/4
}

// lookupLocked returns the row of k in the ring (valid until the shard's
// next append), dropping an index entry the ring has overwritten.
func (sh *rowCacheShard) lookupLocked(h uint64, k []byte) ([]byte, bool) {
	p, ok := sh.positionLocked(h)
	if !ok {
		return nil, false
	}
	at := p % uint64(len(sh.ring))
	keyLen := uint64(binary.BigEndian.Uint32(sh.ring[at:]))
	rowLen := uint64(binary.BigEndian.Uint32(sh.ring[at+4:]))
	entry := sh.ring[at+entryHeaderBytes : at+entryHeaderBytes+keyLen+rowLen]
	if string(entry[:keyLen]) != string(k) {
		return nil, false // another key with the same hash
	}
	return entry[keyLen:], true
}

// positionLocked returns the ring position of the entry of hash h, dropping
// an index entry the ring has overwritten.
func (sh *rowCacheShard) positionLocked(h uint64) (uint64, bool) {
	p, ok := sh.index.get(h)
	if !ok {
		return 0, false
	}
	if !sh.intact(p) { // overwritten by a later lap
		sh.index.remove(h)
		return 0, false
	}
	return p, true
}

// appendLocked writes an entry at the head of the ring and indexes it. An
// entry never straddles the ring's end: the head skips to the next lap.
func (c *RowCache) appendLocked(sh *rowCacheShard, h uint64, k, row []byte) {
	size := c.shardBytes
	if sh.ring == nil {
		sh.ring = c.rings.newRing(size)
	}
	n := uint64(entryHeaderBytes + len(k) + len(row))
	if at := sh.head % size; at+n > size {
		sh.head += size - at
	}
	at := sh.head % size
	binary.BigEndian.PutUint32(sh.ring[at:], uint32(len(k)))
	binary.BigEndian.PutUint32(sh.ring[at+4:], uint32(len(row)))
	copy(sh.ring[at+entryHeaderBytes:], k)
	copy(sh.ring[at+entryHeaderBytes+uint64(len(k)):], row)
	pos := sh.head
	sh.head += n // first: entries this one overwrote are no longer intact
	sh.index.put(h, pos, sh.intact)
}

// intact reports whether the entry at absolute position p is still in the
// ring: the head has not lapped it.
func (sh *rowCacheShard) intact(p uint64) bool { return sh.head <= p+uint64(len(sh.ring)) }
