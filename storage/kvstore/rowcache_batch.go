package kvstore

import (
	"encoding/binary"
	"sync"
)

// maxPooledCacheBatchBytes bounds the row buffer a cacheBatch keeps for
// the next read: larger ones, from rare huge reads, go to the collector.
const maxPooledCacheBatchBytes = 4 << 20

// cacheSpan is where a key's row sits in cacheBatch.rows; n == 0 is a key
// the cache does not hold.
type cacheSpan struct {
	at int
	n  uint32
}

// cacheBatch is the scratch of one batched cache read, reused through
// cacheBatches.
type cacheBatch struct {
	keyBuf []byte   // the cache keys, end to end
	keys   [][]byte // into keyBuf
	hash   []uint64 // slot hash of keys[i]
	shard  []uint8  // shard of keys[i]
	order  []int32  // key indexes grouped by shard
	pos    []uint64 // by order index: entry position, or noEntry
	lens   []uint64 // by order index: key length << 32 | row length
	spans  []cacheSpan
	rows   []byte
	hits   int // spans with a row
}

var cacheBatches = sync.Pool{New: func() any { return new(cacheBatch) }}

const noEntry = ^uint64(0)

// release returns b to the pool.
func (b *cacheBatch) release() {
	if cap(b.rows) > maxPooledCacheBatchBytes {
		b.rows = nil
	}
	clear(b.keys) // no slices into keyBuf's old contents stay reachable through the pool
	cacheBatches.Put(b)
}

// reset sizes b's per-key slices for n keys.
func (b *cacheBatch) reset(n int) {
	b.keyBuf = b.keyBuf[:0]
	b.keys = resize(b.keys, n)
	b.hash = resize(b.hash, n)
	b.shard = resize(b.shard, n)
	b.order = resize(b.order, n)
	b.pos = resize(b.pos, n)
	b.lens = resize(b.lens, n)
	b.spans = resize(b.spans, n)
	b.rows = b.rows[:0]
	b.hits = 0
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// lookupRows copies the cached rows of b.keys into b.rows and sets
// b.spans. It takes each shard's lock once for all of the shard's keys and
// reads in phases (every index slot, then every entry header, then the
// keys and rows), so the cache misses of one key's reads overlap those of
// the next instead of each waiting behind a lock's memory fence: over a
// cache of gigabytes each read is a miss.
func (c *RowCache) lookupRows(b *cacheBatch) {
	n := len(b.keys)
	var count [rowCacheShards + 1]int32
	for i, k := range b.keys {
		b.shard[i], b.hash[i] = c.split(k)
		count[b.shard[i]+1]++
	}
	for s := 1; s <= rowCacheShards; s++ {
		count[s] += count[s-1] // count[s]: the first order index of shard s
	}
	next := count
	for i := range n {
		s := b.shard[i]
		b.order[next[s]] = int32(i)
		next[s]++
	}
	for s := range rowCacheShards {
		lo, hi := count[s], count[s+1]
		if lo == hi {
			continue
		}
		c.shards[s].lookupRowsLocked(b, lo, hi)
	}
}

// lookupRowsLocked is lookupRows for the keys at order indexes [lo, hi),
// all of this shard.
func (sh *rowCacheShard) lookupRowsLocked(b *cacheBatch, lo, hi int32) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for j := lo; j < hi; j++ {
		p, ok := sh.positionLocked(b.hash[b.order[j]])
		if !ok {
			p = noEntry
		}
		b.pos[j] = p
	}
	size := uint64(len(sh.ring))
	for j := lo; j < hi; j++ {
		if p := b.pos[j]; p != noEntry {
			at := p % size
			b.lens[j] = uint64(binary.BigEndian.Uint32(sh.ring[at:]))<<32 | uint64(binary.BigEndian.Uint32(sh.ring[at+4:]))
		}
	}
	for j := lo; j < hi; j++ {
		i := b.order[j]
		b.spans[i] = cacheSpan{}
		p := b.pos[j]
		if p == noEntry {
			continue
		}
		at := p%size + entryHeaderBytes
		keyLen, rowLen := b.lens[j]>>32, b.lens[j]&(1<<32-1)
		entry := sh.ring[at : at+keyLen+rowLen]
		if string(entry[:keyLen]) != string(b.keys[i]) {
			continue // another key with the same hash
		}
		b.spans[i] = cacheSpan{at: len(b.rows), n: uint32(rowLen)}
		b.hits++
		b.rows = append(b.rows, entry[keyLen:]...)
	}
}
