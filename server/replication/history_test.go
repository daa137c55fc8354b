package replication

import (
	"testing"

	"pgregory.net/rapid"
)

func TestDivergence(t *testing.T) {
	cases := []struct {
		name       string
		copy       []EpochSpan
		leader     []EpochSpan
		localStart int64
		want       int64
		ok         bool
	}{
		{"same history", []EpochSpan{{1, 0, 50}, {2, 50, 100}}, []EpochSpan{{1, 0, 50}, {2, 50, 120}, {3, 120, 130}}, 0, 0, false},
		{"the copy holds more of the old leader's epoch", []EpochSpan{{1, 0, 50}, {2, 50, 100}}, []EpochSpan{{1, 0, 50}, {2, 50, 70}, {3, 70, 90}}, 0, 70, true},
		{"a newer epoch the leader never had", []EpochSpan{{1, 0, 50}, {2, 50, 100}}, []EpochSpan{{1, 0, 60}, {3, 60, 90}}, 0, 50, true},
		{"the leader's log ends first", []EpochSpan{{1, 0, 100}}, []EpochSpan{{1, 0, 40}}, 0, 40, true},
		{"below the leader's start is taken as agreeing", []EpochSpan{{1, 0, 50}, {2, 50, 100}}, []EpochSpan{{2, 80, 100}, {4, 100, 110}}, 80, 0, false},
		{"below the leader's start, an epoch newer than its oldest", []EpochSpan{{1, 0, 40}, {3, 40, 60}, {4, 60, 100}}, []EpochSpan{{2, 80, 100}, {5, 100, 110}}, 80, 40, true},
		{"below the leader's start, its oldest epoch", []EpochSpan{{1, 0, 40}, {2, 40, 100}}, []EpochSpan{{2, 80, 100}, {5, 100, 110}}, 80, 0, false},
		{"a gap in the copy is skipped", []EpochSpan{{1, 0, 40}, {2, 60, 100}}, []EpochSpan{{1, 0, 45}, {2, 45, 90}, {5, 90, 95}}, 0, 90, true},
		{"overlapping segments", []EpochSpan{{1, 0, 60}, {1, 30, 60}, {2, 60, 80}}, []EpochSpan{{1, 0, 60}, {3, 60, 70}}, 0, 60, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Divergence(c.copy, c.leader, c.localStart)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("Divergence = %d, %v; want %d, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// TestDivergenceProperties: over random pairs of logs, every offset below
// the divergence point that both hold is of the same epoch in both, and at
// the point the copy holds a batch the leader holds otherwise or not.
func TestDivergenceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spans := func(label string) []EpochSpan {
			n := rapid.IntRange(1, 5).Draw(t, label+"_n")
			var out []EpochSpan
			at, epoch := int64(0), int32(0)
			for range n {
				epoch += int32(rapid.IntRange(1, 2).Draw(t, label+"_de"))
				length := int64(rapid.IntRange(1, 20).Draw(t, label+"_len"))
				out = append(out, EpochSpan{Epoch: epoch, Start: at, End: at + length})
				at += length
			}
			return out
		}
		copy, leader := spans("copy"), spans("leader")
		d, ok := Divergence(copy, leader, 0)
		epochAt := func(s []EpochSpan, o int64) (int32, bool) {
			sp, held := spanAt(s, o)
			return sp.Epoch, held
		}
		for _, c := range copy {
			for o := c.Start; o < c.End; o++ {
				le, held := epochAt(leader, o)
				agrees := held && le == c.Epoch
				if (!ok || o < d) && !agrees {
					t.Fatalf("offset %d: copy epoch %d, leader %d (held %v), but divergence %d, %v", o, c.Epoch, le, held, d, ok)
				}
				if ok && o == d && agrees {
					t.Fatalf("divergence at %d, where both hold epoch %d", d, c.Epoch)
				}
			}
		}
	})
}
