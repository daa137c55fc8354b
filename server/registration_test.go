package server

import (
	"errors"
	"testing"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestRegistrationRetriable: a registration that meets the local Raft
// node's leader trouble is tried again; a refusal by the state machine is
// final.
func TestRegistrationRetriable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no leader yet", raftmeta.ErrNoLeader, true},
		{"not the leader", raftmeta.ErrNotLeader, true},
		{"outcome unknown", raftmeta.ErrUnknownOutcome, true},
		{"wire unavailable", transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "busy"), true},
		{"refused", transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "bad rack"), false},
		{"other", errors.New("disk on fire"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := registrationRetriable(tc.err); got != tc.want {
				t.Fatalf("registrationRetriable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
