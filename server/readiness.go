package server

import (
	"fmt"
	"strconv"
	"strings"
)

// readinessInput is what a node knows of itself when asked whether it is
// ready.
type readinessInput struct {
	formed bool // in a cluster: Raft runs (meta) or the cluster id is known (tablet)
	// registeredAt is the Raft index of this run's registration, 0 before.
	registeredAt uint64
	// registerErr is why the registration was refused, "" when it was not.
	registerErr string

	meta        bool   // the node is a metadata voter or non-voter
	leader      uint32 // the metadata leader it sees, 0 for none
	metaApplied uint64 // its state machine's applied index
	// unregisteredVoters are the metadata voters (a new cluster's
	// --bootstrap-expect founders) not registered as nodes yet, of voters.
	unregisteredVoters []uint32
	voters             int
	votersErr          string // why the voters could not be read

	tablet        bool   // the node hosts replicas
	tabletApplied uint64 // index of the last metadata its replicas acted on
	watching      bool   // its metadata watch is up
	watchErr      string // why the last watch ended
}

// readiness decides whether a node is ready to serve and, when not, says
// why: a meta node once it sees a leader, has applied its own registration
// and sees every metadata voter registered (so a table created now is
// placed on every node a new cluster was started with, not on the first
// to register); a tablet node once registered and following the metadata
// from that registration on, so a table created now can be placed on it.
func readiness(in readinessInput) (bool, string) {
	switch {
	case !in.formed:
		return false, "not in a cluster yet"
	case in.registerErr != "":
		return false, "registration refused: " + in.registerErr
	case in.registeredAt == 0:
		return false, "not registered yet"
	}
	if in.meta {
		if in.leader == 0 {
			return false, "no metadata leader"
		}
		if in.metaApplied < in.registeredAt {
			return false, fmt.Sprintf("metadata applied to index %d, below this node's registration at %d", in.metaApplied, in.registeredAt)
		}
		if in.votersErr != "" {
			return false, "cannot read the metadata voters: " + in.votersErr
		}
		if len(in.unregisteredVoters) > 0 {
			return false, fmt.Sprintf("metadata voters not registered yet: %s (%d of %d registered)",
				joinIDs(in.unregisteredVoters), in.voters-len(in.unregisteredVoters), in.voters)
		}
	}
	if in.tablet {
		if in.tabletApplied < in.registeredAt {
			return false, fmt.Sprintf("tablet has not acted on metadata at or above its registration (index %d) yet", in.registeredAt)
		}
		if !in.watching {
			why := "metadata watch is not connected"
			if in.watchErr != "" {
				why += ": " + in.watchErr
			}
			return false, why
		}
	}
	return true, ""
}

// joinIDs is "2, 3".
func joinIDs(ids []uint32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, ", ")
}
