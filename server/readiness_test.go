package server

import (
	"strings"
	"testing"
)

func TestReadiness(t *testing.T) {
	metaTablet := readinessInput{formed: true, registeredAt: 10, meta: true, leader: 1, metaApplied: 12,
		tablet: true, tabletApplied: 12, watching: true}
	with := func(f func(*readinessInput)) readinessInput {
		in := metaTablet
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name string
		in   readinessInput
		why  string // "" = ready
	}{
		{"ready", metaTablet, ""},
		{"not formed", readinessInput{meta: true}, "not in a cluster"},
		{"registration refused", with(func(in *readinessInput) { in.registeredAt, in.registerErr = 0, "bad rack" }), "registration refused: bad rack"},
		{"not registered", with(func(in *readinessInput) { in.registeredAt = 0 }), "not registered"},
		{"no leader", with(func(in *readinessInput) { in.leader = 0 }), "no metadata leader"},
		{"meta behind its registration", with(func(in *readinessInput) { in.metaApplied = 9 }), "below this node's registration at 10"},
		{"tablet not following yet", with(func(in *readinessInput) { in.tabletApplied = 0 }), "tablet has not acted on metadata"},
		{"watch down", with(func(in *readinessInput) { in.watching, in.watchErr = false, "EOF" }), "metadata watch is not connected: EOF"},
		{"founders not registered", with(func(in *readinessInput) { in.unregisteredVoters, in.voters = []uint32{2, 3}, 3 }),
			"metadata voters not registered yet: 2, 3 (1 of 3 registered)"},
		{"voters unknown", with(func(in *readinessInput) { in.votersErr = "timeout" }), "cannot read the metadata voters: timeout"},
		{"tablet-only ready", readinessInput{formed: true, registeredAt: 4, tablet: true, tabletApplied: 4, watching: true}, ""},
		{"meta-only ready", readinessInput{formed: true, registeredAt: 4, meta: true, leader: 2, metaApplied: 4}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, why := readiness(tc.in)
			if ready != (tc.why == "") || !strings.Contains(why, tc.why) || (ready && why != "") {
				t.Fatalf("readiness = %v %q, want reason containing %q", ready, why, tc.why)
			}
		})
	}
}
