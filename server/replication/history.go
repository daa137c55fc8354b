package replication

import "math"

// The remote log and KV snapshots of a bucket are copies of one history:
// the old leader's. An unclean election starts a new one, which may hold
// other batches at offsets the copies hold (remote storage 6). Where the
// two agree is decided by leader epochs, as between a follower and its
// leader (KIP-320): one leader wrote each epoch, so two logs that hold a
// batch of the same epoch at an offset hold the same batch there.

// EpochSpan says that a log's batches in [Start, End) are of leader epoch
// Epoch.
type EpochSpan struct {
	Epoch      int32
	Start, End int64
}

// Spans turns an epoch cache (each epoch with the offset it starts at,
// oldest first) of a log ending at end into spans. Epochs that start at
// or past end hold nothing and are left out.
func Spans(starts []EpochSpan, end int64) []EpochSpan {
	out := make([]EpochSpan, 0, len(starts))
	for i, e := range starts {
		next := end
		if i+1 < len(starts) {
			next = min(starts[i+1].Start, end)
		}
		if e.Start < next {
			out = append(out, EpochSpan{Epoch: e.Epoch, Start: e.Start, End: next})
		}
	}
	return out
}

// Divergence is the first offset at which the copy (the spans of the
// remote log) holds a batch that the leader's log, holding [localStart,
// end of its last span), holds in another epoch or not at all. Below
// localStart the leader has nothing to compare with: what it lost to
// retention or never held there is taken as agreeing, since the copy is
// the only one left, but only in an epoch at most the leader's oldest
// (the one its log starts in): epochs only grow along one history, so a
// batch there of a newer epoch than that is another history's (tier
// simulation seed 67994: a cut that kept one let a replica holding the
// leader's older history there serve it as the copy's). ok is false when
// they agree everywhere the copy holds.
func Divergence(copy, leader []EpochSpan, localStart int64) (offset int64, ok bool) {
	first := int64(math.MaxInt64)
	for _, c := range copy {
		if c.Start < localStart && len(leader) > 0 && c.Epoch > leader[0].Epoch {
			first = min(first, c.Start)
			continue
		}
		for o := max(c.Start, localStart); o < c.End && o < first; {
			l, held := spanAt(leader, o)
			if !held || l.Epoch != c.Epoch {
				first = o
				break
			}
			o = min(c.End, l.End)
		}
	}
	return first, first != math.MaxInt64
}

// spanAt returns the span holding offset.
func spanAt(spans []EpochSpan, offset int64) (EpochSpan, bool) {
	for _, s := range spans {
		if s.Start <= offset && offset < s.End {
			return s, true
		}
	}
	return EpochSpan{}, false
}
