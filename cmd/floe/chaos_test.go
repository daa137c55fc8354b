package main

import (
	"encoding/json"
	"strings"
	"testing"

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
