package chaos

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/floedb/floe/client"
)

// The checkers must catch what they look for: each case breaks one
// promise.
func TestCompareLog(t *testing.T) {
	at := func(bucket int32, offset int64) logPos { return logPos{part: 7, bucket: bucket, offset: offset} }
	read := func(writer, seq int64, pos logPos) readRecord { return readRecord{recordID{writer, seq}, pos} }
	acked := map[recordID]logPos{{1, 0}: at(0, 0), {1, 1}: at(0, 1)}
	good := []readRecord{read(1, 0, at(0, 0)), read(1, 1, at(0, 1)), read(2, 0, at(1, 0))}
	tests := []struct {
		name  string
		reads []readRecord
		check func(LogResult) bool
	}{
		{"clean", good, func(r LogResult) bool { return r.Lost+r.Duplicated+r.Reordered+r.WrongOffset == 0 && r.Read == 3 }},
		{"lost", good[1:], func(r LogResult) bool { return r.Lost == 1 }},
		{"duplicated", append(slices.Clone(good), read(2, 0, at(1, 1))),
			func(r LogResult) bool { return r.Duplicated == 1 }},
		{"reordered", []readRecord{read(1, 1, at(0, 0)), read(1, 0, at(0, 1))},
			func(r LogResult) bool { return r.Reordered == 1 && r.WrongOffset == 2 }},
		{"moved", []readRecord{read(1, 0, at(0, 5)), read(1, 1, at(0, 6))}, func(r LogResult) bool { return r.WrongOffset == 2 }},
	}
	for _, tt := range tests {
		var res LogResult
		compareLog(&res, acked, tt.reads)
		if !tt.check(res) {
			t.Errorf("%s: %+v", tt.name, res)
		}
	}
}

// TestCompareLogByPartition: buckets of different partitions are
// different logs: a writer's sequence starts over in each, and the same
// bucket and offset in another partition is another place.
func TestCompareLogByPartition(t *testing.T) {
	p1 := func(offset int64) logPos { return logPos{part: 11, partition: "dt=2026-01-01", offset: offset} }
	p2 := func(offset int64) logPos { return logPos{part: 12, partition: "dt=2026-01-02", offset: offset} }
	acked := map[recordID]logPos{{1, 0}: p1(0), {1, 1}: p2(0), {1, 2}: p1(1)}
	tests := []struct {
		name  string
		reads []readRecord
		check func(LogResult) bool
	}{
		{"clean", []readRecord{{recordID{1, 0}, p1(0)}, {recordID{1, 2}, p1(1)}, {recordID{1, 1}, p2(0)}},
			func(r LogResult) bool { return r.Lost+r.Duplicated+r.Reordered+r.WrongOffset == 0 }},
		{"in the other partition", []readRecord{{recordID{1, 0}, p1(0)}, {recordID{1, 2}, p1(1)}, {recordID{1, 1}, p1(2)}},
			func(r LogResult) bool { return r.WrongOffset == 1 && r.Reordered == 1 }},
		{"lost with its partition", []readRecord{{recordID{1, 1}, p2(0)}},
			func(r LogResult) bool { return r.Lost == 2 }},
	}
	for _, tt := range tests {
		var res LogResult
		compareLog(&res, acked, tt.reads)
		if !tt.check(res) {
			t.Errorf("%s: %+v", tt.name, res)
		}
	}
}

// TestDayPlan: the oldest live day closes once more than liveDays are
// live, a closed day is never picked again, only a retired day's records
// are excluded, and the churn's counts come from the partitions it
// listed.
func TestDayPlan(t *testing.T) {
	p := newDayPlan()
	for range liveDays {
		p.open(p.next())
	}
	if _, ok := p.close(); ok {
		t.Fatalf("closed a day with %d days live", liveDays)
	}
	p.open(p.next())
	closed, ok := p.close()
	if !ok || closed != "2026-01-01" {
		t.Fatalf("closed %q %v", closed, ok)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		if d := p.pick(rng); d == closed {
			t.Fatalf("picked the closed day %s", d)
		}
	}
	if d := p.liveDay(0); d != "2026-01-02" {
		t.Fatalf("oldest live day %s", d)
	}
	p.keep(closed)
	if p.isRetired(dayPartition(closed)) {
		t.Fatalf("a kept day is retired")
	}
	old, ok := p.oldestKept()
	if !ok || old != closed {
		t.Fatalf("oldest kept %q %v", old, ok)
	}
	name := p.retire(old)
	if name != "dt=2026-01-01" || !p.isRetired(name) || !slices.Equal(p.pendingDrops(), []string{name}) {
		t.Fatalf("retired %q, pending %v", name, p.pendingDrops())
	}
	p.dropped(name)
	if len(p.pendingDrops()) != 0 {
		t.Fatalf("pending %v after the drop", p.pendingDrops())
	}
	p.saw([]client.PartitionInfo{{ID: 5, Name: name, Origin: "explicit"}, {ID: 6, Name: "dt=2026-01-02", Origin: "on-write"}})
	final := []bucketSet{{partition: "dt=2026-01-02", id: 6}, {partition: name, id: 9}} // made again by a writer
	want := PartitionResult{Explicit: 1, OnWrite: 1, Dropped: 1, Recreated: 1}
	if got := p.result(final); got != want {
		t.Fatalf("result %+v, want %+v", got, want)
	}
	if d := p.droppedSets(final, 2); len(d) != 1 || d[0].id != 5 || !d[0].dropped || len(d[0].replicas) != 2 {
		t.Fatalf("dropped sets %+v", d)
	}
}

// TestLeaderChanges: leader epochs grow per bucket of each set; a set
// made since counts from epoch 0, one dropped since not at all.
func TestLeaderChanges(t *testing.T) {
	before := []bucketSet{{id: 1, buckets: []client.Bucket{{Bucket: 0, LeaderEpoch: 2}, {Bucket: 1, LeaderEpoch: 1}}},
		{id: 2, buckets: []client.Bucket{{Bucket: 0, LeaderEpoch: 9}}}}
	after := []bucketSet{{id: 1, buckets: []client.Bucket{{Bucket: 0, LeaderEpoch: 3}, {Bucket: 1, LeaderEpoch: 1}}},
		{id: 3, buckets: []client.Bucket{{Bucket: 0, LeaderEpoch: 2}}}}
	if n := leaderChanges(before, after); n != 3 {
		t.Fatalf("%d leader changes, want 3", n)
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

// TestLeftovers: a folder of a bucket on a node its replica list does not
// name is a leftover, and a dropped partition's lists name no node.
func TestLeftovers(t *testing.T) {
	c := &Cluster{}
	for id := range uint32(2) {
		c.Nodes = append(c.Nodes, &Node{ID: id + 1, DataDir: t.TempDir()})
	}
	for _, dir := range []string{c.Nodes[0].replicaDir(4, 0), c.Nodes[1].replicaDir(4, 0), c.Nodes[1].replicaDir(5, 1)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sets := []replicaSet{
		{partition: "dt=2026-01-02", id: 4, replicas: [][]uint32{{1, 2}, {1, 2}}},
		{partition: "dt=2026-01-01", id: 5, dropped: true, replicas: make([][]uint32, 2)},
	}
	left := c.leftovers(sets)
	if len(left) != 1 || left[0].set != 1 || left[0].bucket != 1 || !slices.Equal(left[0].nodes, []uint32{2}) {
		t.Fatalf("leftovers %+v, want node 2's folder of the dropped partition's bucket 1", left)
	}
	if got := sets[1].bucketName(1); got != "dt=2026-01-01 (id 5, dropped) bucket 1" {
		t.Fatalf("bucket name %q", got)
	}
}
