package kvstore

import (
	"testing"

	"pgregory.net/rapid"
)

// TestRowIndexMatchesMap runs random puts, removes and deaths (positions
// below a rising floor stop being live) against a map: every live entry is
// found with its position, no removed or never-put hash is found, and the
// table grows only when its live entries fill half of it.
func TestRowIndexMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var x rowIndex
		model := map[uint64]uint64{}
		floor, next := uint64(0), uint64(0)
		live := func(pos uint64) bool { return pos >= floor }
		// Few distinct low bits: long probe runs that wrap around the table.
		hash := rapid.Custom(func(t *rapid.T) uint64 {
			return slotHash(rapid.Uint64Range(0, 40).Draw(t, "lo") | rapid.Uint64Range(0, 3).Draw(t, "hi")<<40)
		})
		for range rapid.IntRange(1, 400).Draw(t, "ops") {
			size := len(x.slots)
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4:
				h := hash.Draw(t, "put")
				x.put(h, next, live)
				model[h] = next
				next++
			case 5, 6:
				h := hash.Draw(t, "remove")
				x.remove(h)
				delete(model, h)
			case 7:
				floor = min(next, floor+uint64(rapid.IntRange(0, 20).Draw(t, "die")))
			default:
				h := hash.Draw(t, "get")
				pos, ok := x.get(h)
				want, in := model[h]
				switch {
				case in && live(want) && (!ok || pos != want):
					t.Fatalf("get(%x) = %d, %v; want %d", h, pos, ok, want)
				case !in && ok:
					t.Fatalf("get(%x) = %d for a hash not in the index", h, pos)
				case ok && pos != want:
					t.Fatalf("get(%x) = %d, a position it never had (want %d)", h, pos, want)
				}
			}
			n := 0
			for h, pos := range model {
				if !live(pos) {
					continue
				}
				n++
				if got, ok := x.get(h); !ok || got != pos {
					t.Fatalf("live %x at %d: get = %d, %v", h, pos, got, ok)
				}
			}
			// The table never shrinks (removes leave it as large as it
			// was), but it grows only while live entries fill half of it.
			if grew := len(x.slots) > size && len(x.slots) > minIndexSlots; grew && len(x.slots) > 4*n+4 {
				t.Fatalf("grew to %d slots for %d entries (%d live)", len(x.slots), x.used, n)
			}
		}
	})
}

// TestRowCacheIndexFollowsTheRing caches far more distinct keys than the
// ring holds: the index keeps a size proportional to what the ring holds,
// not to every key it ever held.
func TestRowCacheIndexFollowsTheRing(t *testing.T) {
	c := NewRowCache(rowCacheShards * 16 << 10) // 16 KiB per shard
	always := func() bool { return true }
	row := make([]byte, 100)
	for i := range 200_000 {
		c.put([]byte{byte(i), byte(i >> 8), byte(i >> 16), 'k'}, row, always)
	}
	perEntry := entryHeaderBytes + 4 + len(row)
	maxLive := 16<<10/perEntry + 1
	for i := range c.shards {
		if n := len(c.shards[i].index.slots); n > 4*maxLive && n > minIndexSlots {
			t.Fatalf("shard %d: %d index slots for at most %d live entries", i, n, maxLive)
		}
	}
}
