package kvstore

// rowIndex maps the 64-bit hash of a cached key to the absolute ring
// position of its entry: an open-addressing table with linear probing,
// kept in one slice of pairs, so the garbage collector never walks it and
// a lookup touches one or two cache lines. Deletion shifts the following
// entries back instead of leaving tombstones, so probes stay short under
// the cache's constant churn.
//
// Entries whose ring space was overwritten are dropped when a lookup meets
// them and, all at once, whenever the table fills up: it grows only if
// live entries still fill half of it, so its size follows what the ring
// holds, not every key ever cached.
type rowIndex struct {
	slots []indexSlot // length a power of two; hash 0 marks an empty slot
	used  int
}

type indexSlot struct{ hash, pos uint64 }

const minIndexSlots = 64

// slotHash makes h usable as a slot hash: never 0, the empty mark. It sets
// the top bit, which callers leave free, not a low one, which picks slots.
func slotHash(h uint64) uint64 { return h | 1<<63 }

// find returns the slot of hash h and whether it holds h; when it does
// not, the slot is where h would go.
func (x *rowIndex) find(h uint64) (int, bool) {
	if len(x.slots) == 0 {
		return -1, false
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch x.slots[i].hash {
		case h:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

// get returns the position stored for h.
func (x *rowIndex) get(h uint64) (uint64, bool) {
	i, ok := x.find(h)
	if !ok {
		return 0, false
	}
	return x.slots[i].pos, true
}

// put stores pos for h. live reports whether a stored position still
// holds its entry; put uses it to drop dead entries before it grows the
// table.
func (x *rowIndex) put(h, pos uint64, live func(pos uint64) bool) {
	if i, ok := x.find(h); ok {
		x.slots[i].pos = pos
		return
	}
	if (x.used+1)*4 > len(x.slots)*3 {
		x.rebuild(live)
	}
	i, _ := x.find(h)
	x.slots[i] = indexSlot{hash: h, pos: pos}
	x.used++
}

// remove drops h, if present.
func (x *rowIndex) remove(h uint64) {
	i, ok := x.find(h)
	if !ok {
		return
	}
	mask := len(x.slots) - 1
	// Backward-shift deletion: move each following entry of the probe run
	// into the hole unless its home slot lies cyclically in (hole, j].
	for j := (i + 1) & mask; x.slots[j].hash != 0; j = (j + 1) & mask {
		home := int(x.slots[j].hash) & mask
		if (j-home)&mask < (j-i)&mask {
			continue // its home is after the hole: it must not move before it
		}
		x.slots[i] = x.slots[j]
		i = j
	}
	x.slots[i] = indexSlot{}
	x.used--
}

// rebuild reinserts the live entries into a table at most half full after
// them: the same size when enough entries were dead, else twice as large.
func (x *rowIndex) rebuild(live func(pos uint64) bool) {
	old := x.slots
	n := 0
	for _, s := range old {
		if s.hash != 0 && live(s.pos) {
			n++
		}
	}
	size := max(len(old), minIndexSlots)
	for n*2 > size {
		size *= 2
	}
	x.slots = make([]indexSlot, size)
	x.used = 0
	mask := uint64(size - 1)
	for _, s := range old {
		if s.hash == 0 || !live(s.pos) {
			continue
		}
		i := s.hash & mask
		for x.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
		x.used++
	}
}
