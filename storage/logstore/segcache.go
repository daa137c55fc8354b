package logstore

import "sync"

// segmentCache bounds the segments that hold a mapping open, over all the
// logs of a scheduler (one node). It is a CLOCK approximation of LRU: a
// read only sets the segment's used bit (an atomic store, no lock on the
// read path), and opening a segment past the bound sweeps a hand over the
// open ones, clearing used bits, until it finds one unused since the hand
// last passed, which it closes. A dirty segment (writes not yet fsynced) is
// passed over, so the bound can be exceeded by segments awaiting an fsync
// (the active segments of SyncNever logs, typically).
type segmentCache struct {
	mu   sync.Mutex
	max  int
	ring []*segment // each with slot set to its index
	hand int
}

func newSegmentCache(max int) *segmentCache { return &segmentCache{max: max} }

// add records that s opened a mapping, closing others past the bound.
func (c *segmentCache) add(s *segment) {
	var evicted []*mapping
	c.mu.Lock()
	if s.slot < 0 {
		for len(c.ring) >= c.max {
			m, ok := c.evictLocked()
			if !ok {
				break // every other open segment is dirty
			}
			if m != nil {
				evicted = append(evicted, m)
			}
		}
		s.slot = len(c.ring)
		c.ring = append(c.ring, s)
	}
	c.mu.Unlock()
	// Unmapping can take a while; nobody waits on the cache for it.
	for _, m := range evicted {
		m.release()
	}
}

// evictLocked takes one segment out of the ring, returning its mapping to
// release (nil when it had none left). ok false: none could go.
func (c *segmentCache) evictLocked() (*mapping, bool) {
	for range 2 * len(c.ring) {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		s := c.ring[c.hand]
		if s.used.Swap(false) {
			c.hand++
			continue
		}
		m, ok := s.detachIdle()
		if !ok {
			c.hand++
			continue
		}
		c.removeLocked(s)
		return m, true
	}
	return nil, false
}

// forget takes s out of the ring (it closed).
func (c *segmentCache) forget(s *segment) {
	c.mu.Lock()
	if s.slot >= 0 {
		c.removeLocked(s)
	}
	c.mu.Unlock()
}

func (c *segmentCache) removeLocked(s *segment) {
	i, last := s.slot, len(c.ring)-1
	if c.ring[i] != s {
		panic("logstore: segment cache slot out of step")
	}
	c.ring[i] = c.ring[last]
	c.ring[i].slot = i
	c.ring[last] = nil
	c.ring = c.ring[:last]
	s.slot = -1
}

// open reports how many segments are in the ring, for tests and metrics.
func (c *segmentCache) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ring)
}
