package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/floedb/floe/internal/pkgerr"
)

const epochFile = "leader-epoch"

// EpochEntry says leader epoch Epoch wrote its first batch at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the persisted epoch → start offset map (KIP-101). Writers
// hold the log's append lock; readers take mu.
type epochCache struct {
	mu      sync.RWMutex
	dir     string
	entries []EpochEntry // ascending in both fields
}

func loadEpochCache(dir string) (*epochCache, error) {
	c := &epochCache{dir: dir}
	buf, err := readCheckpoint(dir, epochFile)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if len(buf)%12 != 0 {
		return nil, fmt.Errorf("%w: %s: %d bytes", ErrCorrupt, epochFile, len(buf))
	}
	for p := 0; p < len(buf); p += 12 {
		e := EpochEntry{Epoch: int32(binary.BigEndian.Uint32(buf[p:])), StartOffset: int64(binary.BigEndian.Uint64(buf[p+4:]))}
		if n := len(c.entries); e.Epoch < 0 || e.StartOffset < 0 ||
			n > 0 && (e.Epoch <= c.entries[n-1].Epoch || e.StartOffset < c.entries[n-1].StartOffset) {
			return nil, fmt.Errorf("%w: %s: entry %d out of order", ErrCorrupt, epochFile, p/12)
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}

func (c *epochCache) persist() error {
	buf := make([]byte, 0, 12*len(c.entries))
	for _, e := range c.entries {
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.Epoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.StartOffset))
	}
	return writeCheckpoint(c.dir, epochFile, buf)
}

func (c *epochCache) latest() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

func (c *epochCache) snapshot() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.entries...)
}

// assign records that epoch starts at start. Re-assigning the latest epoch is
// a no-op; an older epoch is refused.
func (c *epochCache) assign(epoch int32, start int64) error {
	if epoch < 0 {
		return fmt.Errorf("%w: epoch %d", ErrStaleEpoch, epoch)
	}
	if last, ok := c.latest(); ok {
		if epoch == last.Epoch {
			return nil
		}
		if epoch < last.Epoch {
			return fmt.Errorf("%w: epoch %d, the log is at %d", ErrStaleEpoch, epoch, last.Epoch)
		}
		if start < last.StartOffset {
			return pkgerr.Errorf("logstore", "epoch %d cannot start at %d, before epoch %d's start %d",
				epoch, start, last.Epoch, last.StartOffset)
		}
	}
	c.mu.Lock()
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: start})
	c.mu.Unlock()
	return c.persist()
}

// truncateFromEnd drops epochs that start at or after end: the log no longer
// holds any batch of theirs.
func (c *epochCache) truncateFromEnd(end int64) error {
	c.mu.Lock()
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= end })
	changed := i < len(c.entries)
	c.entries = c.entries[:i]
	c.mu.Unlock()
	if !changed {
		return nil
	}
	return c.persist()
}

// clampToEnd fits the cache to a log recovered up to end, which may have
// lost a tail (or never had a batch of the newest epoch): epochs that start
// at or after end have no batch left and go, except the newest, which moves
// down to end. The newest epoch ever assigned must survive a crash: a
// replica's next epoch decisions and a follower's divergence check start
// from it.
func (c *epochCache) clampToEnd(end int64) error {
	c.mu.Lock()
	n := len(c.entries)
	i := sort.Search(n, func(i int) bool { return c.entries[i].StartOffset >= end })
	if i == n {
		c.mu.Unlock()
		return nil
	}
	newest := c.entries[n-1]
	changed := i < n-1 || newest.StartOffset != end
	newest.StartOffset = end
	c.entries = append(c.entries[:i], newest)
	c.mu.Unlock()
	if !changed {
		return nil
	}
	return c.persist()
}

// truncateFromStart forgets epochs wholly before start and moves the first
// remaining epoch's start up to it.
func (c *epochCache) truncateFromStart(start int64) error {
	c.mu.Lock()
	// Keep the last entry starting at or before start, and everything after.
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > start })
	changed := false
	if i > 0 {
		keep := c.entries[i-1:]
		if keep[0].StartOffset < start {
			keep[0].StartOffset = start
			changed = true
		}
		if i > 1 {
			changed = true
		}
		c.entries = append(c.entries[:0], keep...)
	}
	c.mu.Unlock()
	if !changed {
		return nil
	}
	return c.persist()
}

// endOffsetFor answers KIP-279's question for a follower whose last batch has
// the given epoch: the largest epoch at most that one the log knows, and the
// offset where it ends (the next epoch's start, or logEnd for the latest).
// ok is false when the log knows no epoch at or below it, or the epoch is
// newer than any it knows.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (found int32, end int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	if n == 0 || epoch < 0 {
		return 0, 0, false
	}
	if epoch == c.entries[n-1].Epoch {
		return epoch, logEnd, true
	}
	// First entry with a larger epoch.
	i := sort.Search(n, func(i int) bool { return c.entries[i].Epoch > epoch })
	if i == n {
		return 0, 0, false
	}
	if i == 0 {
		// Older than anything here: it ends where our first epoch starts.
		return epoch, c.entries[0].StartOffset, true
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset, true
}
