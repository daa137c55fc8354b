package kvstore

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// rowCacheShards spreads the cache's lock; a power of two.
const rowCacheShards = 32

// rowCacheOverhead approximates the bookkeeping bytes of one entry.
const rowCacheOverhead = 128

// RowCache keeps recently read rows of every Store of a node in memory, in
// front of Badger: a point read that hits it costs a map lookup instead of
// an LSM search and a value-log read. It is bounded in bytes and evicts the
// least recently used rows.
//
// Stores keep it coherent: Apply refreshes the cached keys it writes (new
// row, or gone) after they commit, and a read only fills the cache if no
// Apply committed since the read began (see Store.fill). Keys that are not
// cached stay out: writes do not push read rows out of the cache. A nil
// *RowCache is a disabled cache.
type RowCache struct {
	maxShardBytes int64
	seed          maphash.Seed
	nextStore     atomic.Uint64
	shards        [rowCacheShards]rowCacheShard
}

type rowCacheShard struct {
	mu    sync.Mutex
	items map[string]*list.Element
	lru   list.List // front: most recently used
	bytes int64
}

type rowCacheEntry struct {
	key string
	row []byte
}

// NewRowCache returns a cache of at most maxBytes (nil when maxBytes ≤ 0).
func NewRowCache(maxBytes int64) *RowCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &RowCache{maxShardBytes: max(maxBytes/rowCacheShards, 1), seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].items = map[string]*list.Element{}
	}
	return c
}

// Bytes is the memory the cache holds, approximately.
func (c *RowCache) Bytes() int64 {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.bytes
		sh.mu.Unlock()
	}
	return n
}

// storeID returns a fresh id for a Store's keys: a reopened or rebuilt
// store never sees its predecessor's entries, which age out.
func (c *RowCache) storeID() uint64 { return c.nextStore.Add(1) }

// cacheKey is the store id followed by the store key.
func cacheKey(dst []byte, store uint64, key []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst[:0], store)
	return append(dst, key...)
}

func (c *RowCache) shard(k []byte) *rowCacheShard {
	return &c.shards[maphash.Bytes(c.seed, k)&(rowCacheShards-1)]
}

// get returns the cached row of k; the row must not be modified.
func (c *RowCache) get(k []byte) ([]byte, bool) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.items[string(k)]
	if !ok {
		return nil, false
	}
	sh.lru.MoveToFront(el)
	return el.Value.(*rowCacheEntry).row, true
}

// put caches a copy of row under k if still() holds, checked under the
// shard's lock.
func (c *RowCache) put(k, row []byte, still func() bool) {
	size := int64(len(k)+len(row)) + rowCacheOverhead
	if size > c.maxShardBytes {
		return
	}
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !still() {
		return
	}
	if el, ok := sh.items[string(k)]; ok {
		sh.removeLocked(el)
	}
	e := &rowCacheEntry{key: string(k), row: append([]byte(nil), row...)}
	sh.items[e.key] = sh.lru.PushFront(e)
	sh.bytes += size
	for sh.bytes > c.maxShardBytes {
		sh.removeLocked(sh.lru.Back())
	}
}

// update replaces the cached row of k, if k is cached, with a copy of
// row; a nil row drops k.
func (c *RowCache) update(k, row []byte) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.items[string(k)]
	if !ok {
		return
	}
	if row == nil {
		sh.removeLocked(el)
		return
	}
	e := el.Value.(*rowCacheEntry)
	sh.bytes += int64(len(row) - len(e.row))
	e.row = append([]byte(nil), row...)
	for sh.bytes > c.maxShardBytes {
		sh.removeLocked(sh.lru.Back())
	}
}

// remove drops k.
func (c *RowCache) remove(k []byte) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.items[string(k)]; ok {
		sh.removeLocked(el)
	}
}

func (sh *rowCacheShard) removeLocked(el *list.Element) {
	e := el.Value.(*rowCacheEntry)
	sh.lru.Remove(el)
	delete(sh.items, e.key)
	sh.bytes -= int64(len(e.key)+len(e.row)) + rowCacheOverhead
}
