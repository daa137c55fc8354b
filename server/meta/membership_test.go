package meta

import (
	"errors"
	"testing"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
)

func TestRemovalRisk(t *testing.T) {
	voters := func(ids ...uint32) []raftmeta.Server {
		var out []raftmeta.Server
		for _, id := range ids {
			out = append(out, raftmeta.Server{ID: id, Voter: true})
		}
		return out
	}
	withNonvoter := append(voters(1, 2), raftmeta.Server{ID: 9})
	for _, tc := range []struct {
		name    string
		servers []raftmeta.Server
		remove  uint32
		live    []uint32
		risky   bool
	}{
		{"the last voter", voters(1), 1, []uint32{1}, true},
		{"the last voter with a non-voter left", append(voters(1), raftmeta.Server{ID: 9}), 1, []uint32{1, 9}, true},
		{"3 to 2, both answer", voters(1, 2, 3), 3, []uint32{1, 2}, false},
		{"3 to 2, one answers", voters(1, 2, 3), 2, []uint32{1}, true},
		{"the dead one of 3", voters(1, 2, 3), 3, []uint32{1, 2}, false},
		{"2 to 1", voters(1, 2), 2, []uint32{1}, false},
		{"5 to 4, two answer", voters(1, 2, 3, 4, 5), 5, []uint32{1, 2}, true},
		{"5 to 4, three answer", voters(1, 2, 3, 4, 5), 5, []uint32{1, 2, 3}, false},
		{"non-voters do not count", withNonvoter, 2, []uint32{1, 9}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := map[uint32]bool{}
			for _, id := range tc.live {
				live[id] = true
			}
			err := removalRisk(tc.servers, tc.remove, live)
			if risky := err != nil; risky != tc.risky {
				t.Fatalf("risky %v (%v), want %v", risky, err, tc.risky)
			}
			if err != nil && !errors.Is(err, transport.ErrQuorumAtRisk) {
				t.Fatalf("error %v is not QUORUM_AT_RISK", err)
			}
		})
	}
}
