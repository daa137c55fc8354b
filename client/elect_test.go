package client

import "testing"

func TestElectionWhy(t *testing.T) {
	tests := []struct {
		name    string
		ranking []ElectionCandidate
		want    string
	}{
		{"clean", nil, ""},
		{"by log", []ElectionCandidate{{Node: 2, LogKnown: true, LatestEpoch: 7, EndOffset: 1200}, {Node: 1, LogKnown: true, LatestEpoch: 7, EndOffset: 900}},
			"node 2: log ends at 1200 in epoch 7; node 1: 900 in epoch 7"},
		{"unknown, empty and draining", []ElectionCandidate{{Node: 3, LogKnown: true, LatestEpoch: -1}, {Node: 1},
			{Node: 2, LogKnown: true, LatestEpoch: 4, EndOffset: 50, Draining: true}},
			"node 3: log ends at 0 in no epoch; node 1: log unknown (no answer); node 2: 50 in epoch 4 (draining)"},
		{"none known", []ElectionCandidate{{Node: 1}}, "node 1: log unknown (no answer)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Election{Ranking: tc.ranking}).Why(); got != tc.want {
				t.Fatalf("Why() = %q, want %q", got, tc.want)
			}
		})
	}
}
