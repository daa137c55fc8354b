package tiering

import (
	"container/list"
	"sync"
)

// objectCache keeps decoded immutable objects (manifests, segment
// indexes) by key, least recently used out first once their sizes pass
// maxBytes. A key always names the same bytes (see keys.go), so an entry
// never goes stale.
type objectCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *cacheEntry, most recent first
	byKey    map[string]*list.Element
}

type cacheEntry struct {
	key   string
	value any
	size  int64
}

func newObjectCache(maxBytes int64) *objectCache {
	return &objectCache{maxBytes: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *objectCache) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).value, true
}

func (c *objectCache) put(key string, value any, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, value: value, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes && c.order.Len() > 1 {
		old := c.order.Remove(c.order.Back()).(*cacheEntry)
		delete(c.byKey, old.key)
		c.bytes -= old.size
	}
}
