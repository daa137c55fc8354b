package chaos

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/floedb/floe/client"
)

// The checkers must catch what they look for: each case breaks one
// promise.
func TestCompareLog(t *testing.T) {
	acked := map[recordID]client.AppendResult{{1, 0}: {Bucket: 0, Offset: 0}, {1, 1}: {Bucket: 0, Offset: 1}}
	good := []readRecord{{recordID{1, 0}, 0, 0}, {recordID{1, 1}, 0, 1}, {recordID{2, 0}, 1, 0}}
	tests := []struct {
		name  string
		reads []readRecord
		check func(LogResult) bool
	}{
		{"clean", good, func(r LogResult) bool { return r.Lost+r.Duplicated+r.Reordered+r.WrongOffset == 0 && r.Read == 3 }},
		{"lost", good[1:], func(r LogResult) bool { return r.Lost == 1 }},
		{"duplicated", append(append([]readRecord(nil), good...), readRecord{recordID{2, 0}, 1, 1}),
			func(r LogResult) bool { return r.Duplicated == 1 }},
		{"reordered", []readRecord{{recordID{1, 1}, 0, 0}, {recordID{1, 0}, 0, 1}},
			func(r LogResult) bool { return r.Reordered == 1 && r.WrongOffset == 2 }},
		{"moved", []readRecord{{recordID{1, 0}, 0, 5}, {recordID{1, 1}, 0, 6}}, func(r LogResult) bool { return r.WrongOffset == 2 }},
	}
	for _, tt := range tests {
		var res LogResult
		compareLog(&res, acked, tt.reads)
		if !tt.check(res) {
			t.Errorf("%s: %+v", tt.name, res)
		}
	}
}

func TestKVModelCatchesAnomalies(t *testing.T) {
	op := func(in kvOp, call, ret int64, out int64) porcupine.Operation {
		return porcupine.Operation{Input: in, Call: call, Output: out, Return: ret}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"put then get", []porcupine.Operation{op(kvOp{true, 1, 5}, 0, 1, 0), op(kvOp{false, 1, 0}, 2, 3, 5)}, true},
		{"lost put", []porcupine.Operation{op(kvOp{true, 1, 5}, 0, 1, 0), op(kvOp{false, 1, 0}, 2, 3, 0)}, false},
		{"stale read", []porcupine.Operation{op(kvOp{true, 1, 5}, 0, 1, 0), op(kvOp{true, 1, 6}, 2, 3, 0), op(kvOp{false, 1, 0}, 4, 5, 5)}, false},
		{"unknown put may have happened", []porcupine.Operation{op(kvOp{true, 1, 5}, 0, infinity, 0), op(kvOp{false, 1, 0}, 2, 3, 5)}, true},
		{"unknown put may not have", []porcupine.Operation{op(kvOp{true, 1, 5}, 0, infinity, 0), op(kvOp{false, 1, 0}, 2, 3, 0)}, true},
	} {
		if got := porcupine.CheckOperations(kvModel, tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestDiffLogs(t *testing.T) {
	a := []batchSig{{0, 5, 1}, {5, 9, 2}, {9, 12, 3}}
	if d := diffLogs(a, a[1:]); d != "" {
		t.Errorf("a suffix differs: %s", d)
	}
	b := []batchSig{{0, 5, 1}, {5, 9, 7}}
	if d := diffLogs(a, b); d == "" {
		t.Error("a changed checksum went unnoticed")
	}
	c := []batchSig{{0, 4, 1}, {4, 9, 2}}
	if d := diffLogs(a, c); d == "" {
		t.Error("different batch boundaries went unnoticed")
	}
}

func TestRecoveries(t *testing.T) {
	h := &History{}
	h.events = []Event{
		{At: 10, Kind: "fault", What: "kill"},
		{At: 15, Kind: "op", Start: 5, OK: true},   // started before the fault
		{At: 30, Kind: "op", Start: 12, OK: false}, // failed
		{At: 40, Kind: "op", Start: 20, OK: true},
	}
	if r := h.Recoveries(); len(r) != 1 || r[0].After != 30 {
		t.Fatalf("recoveries %+v, want one after 30", r)
	}
}

func TestDDLModelCatchesAnomalies(t *testing.T) {
	op := func(k ddlKind, out ddlOutcome, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: ddlOp{Kind: k, Name: 0}, Output: out, Call: call, Return: ret}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"create, describe, drop", []porcupine.Operation{op(ddlCreate, outcomeOK, 0, 1), op(ddlDescribe, outcomeOK, 2, 3), op(ddlDrop, outcomeOK, 4, 5)}, true},
		{"created twice", []porcupine.Operation{op(ddlCreate, outcomeOK, 0, 1), op(ddlCreate, outcomeOK, 2, 3)}, false},
		{"describe misses a create", []porcupine.Operation{op(ddlCreate, outcomeOK, 0, 1), op(ddlDescribe, outcomeRefused, 2, 3)}, false},
		{"dropped what was not there", []porcupine.Operation{op(ddlDrop, outcomeOK, 0, 1)}, false},
		{"an unknown create may have happened", []porcupine.Operation{op(ddlCreate, outcomeUnknown, 0, infinity), op(ddlDescribe, outcomeOK, 2, 3)}, true},
		{"a refused create changes nothing", []porcupine.Operation{op(ddlCreate, outcomeNoop, 0, 1), op(ddlDescribe, outcomeOK, 2, 3)}, false},
	} {
		if got := porcupine.CheckOperations(ddlModel, tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestUsedOctets(t *testing.T) {
	out := `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
7: flcabn1    inet 10.129.1.1/30 scope global flcabn1\       valid_lft forever
9: br-1f2e    inet 10.131.0.1/16 brd 10.131.255.255 scope global br-1f2e\       valid_lft forever
12: eth0    inet 172.17.0.2/16 brd 172.17.255.255 scope global eth0`
	used := usedOctets(out)
	if !used[129] || !used[131] || used[17] || used[0] || len(used) != 2 {
		t.Fatalf("used octets %v, want 129 and 131", used)
	}
}

func TestImageNeedsStaticBinary(t *testing.T) {
	if err := staticBinary("/bin/sh"); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("staticBinary(/bin/sh) = %v, want a dynamically-linked error", err)
	}
	if err := staticBinary("/etc/hostname"); err == nil {
		t.Fatal("staticBinary accepted a file that is no ELF binary")
	}
}
