package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/integration/chaos"
)

func TestChaosList(t *testing.T) {
	code, out, errOut := runCLI(t, "", "chaos", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range chaos.Scenarios {
		if !strings.Contains(out, s.Name+" ") {
			t.Errorf("chaos list does not name %s:\n%s", s.Name, out)
		}
	}
	code, out, errOut = runCLI(t, "", "chaos", "list", "-o", "json")
	var list []struct{ Name, Doc string }
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != len(chaos.Scenarios) || list[0].Name != chaos.Scenarios[0].Name || list[0].Doc == "" {
		t.Fatalf("chaos list -o json: exit %d, %v, %q %s", code, err, out, errOut)
	}
}

func TestChaosRunUsage(t *testing.T) {
	for _, args := range [][]string{
		{"chaos", "run", "no-such-scenario"},
		{"chaos", "run", "--seeds", "0"},
		{"chaos", "run", "--output", "yaml"},
		{"chaos", "run", "bridge", "--replay", "x.json"},
	} {
		if code, _, errOut := runCLI(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage): %s", args, code, errOut)
		}
	}
}

// TestChaosHarnessFailureIsNoVerdict: a run whose harness fails (a fault's
// command failed, say) ends the suite with exit status 3 and "harness
// failed, no verdict", not 1 like a broken promise; the verdicts before it
// are still printed, and a promise broken before it still exits 1.
func TestChaosHarnessFailureIsNoVerdict(t *testing.T) {
	pass := chaos.Verdict{KV: chaos.KVResult{Linearizable: true}, DDL: chaos.KVResult{Linearizable: true}}
	broken := pass
	broken.Log.Lost = 1
	harness := errors.New("iptables -A INPUT: signal: killed")
	for _, tc := range []struct {
		name     string
		outcomes []error // nil: the run's verdict; else the harness error
		verdicts []chaos.Verdict
		code     int
		says     string
	}{
		{"pass", []error{nil, nil}, []chaos.Verdict{pass, pass}, 0, ""},
		{"promise broken", []error{nil}, []chaos.Verdict{broken}, 1, "broke a promise"},
		{"harness failed", []error{nil, harness}, []chaos.Verdict{pass}, 3, "harness failed, no verdict: iptables -A INPUT: signal: killed"},
		{"broken, then harness failed", []error{nil, harness}, []chaos.Verdict{broken}, 1, "broke a promise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			i := 0
			fake := func(context.Context, chaos.RunConfig) (chaos.Verdict, error) {
				defer func() { i++ }()
				if err := tc.outcomes[i]; err != nil {
					return chaos.Verdict{}, err
				}
				return tc.verdicts[i], nil
			}
			s, _ := chaos.Find("bridge")
			err := runChaos(t.Context(), &cliEnv{stdout: &out, stderr: &errOut}, chaosPlan{scenarios: []chaos.Scenario{s},
				seed: 1, seeds: len(tc.outcomes), duration: time.Second, dir: t.TempDir(), run: fake})
			code := 0
			if err != nil {
				code = exitStatus(err)
			}
			if code != tc.code || (tc.says != "" && !strings.Contains(err.Error(), tc.says)) {
				t.Fatalf("exit %d (%v), want %d saying %q", code, err, tc.code, tc.says)
			}
			if !strings.Contains(out.String(), "LOG-ACK") {
				t.Errorf("no verdict table printed:\n%s", out.String())
			}
		})
	}
}
