package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// TestReassignMovesABucket: `floe table reassign` moves a bucket's only
// replica to the other node; the new one catches up as a learner, the
// controller completes the move, every row is still there, and `floe
// reassign status` says nothing runs; refusals name what is wrong; a plan
// file starts a move and cancel --all takes it back.
func TestReassignMovesABucket(t *testing.T) {
	fc, table := startLogTable(t, 1, 1)
	name := strings.TrimPrefix(table, fc.db+".")
	fc.mustRun(jsonRows(0, 200), "produce", table)
	_, buckets := fc.status(name)
	from := buckets[0].Replicas[0]
	to := uint32(1)
	if from == 1 {
		to = 2
	}
	out, _ := fc.mustRun("", "table", "reassign", table, "--bucket", "0", "--replicas", fmt.Sprint(to), "--throttle", "50MB")
	if !strings.Contains(out, "moving "+table+" bucket 0: replicas "+fmt.Sprint(to)) || !strings.Contains(out, "throttle 50 MB/s per node") {
		t.Fatalf("reassign said:\n%s", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, buckets = fc.status(name)
		if b := buckets[0]; slices.Equal(b.Replicas, []uint32{to}) && b.Leader == to {
			break
		}
		if time.Now().After(deadline) {
			st, _ := fc.mustRun("", "reassign", "status")
			t.Fatalf("the move did not complete in 30 s: bucket %+v\n%s", buckets[0], st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ = fc.mustRun("", "reassign", "status")
	if !strings.HasPrefix(out, "no move running or waiting") {
		t.Fatalf("status after the move:\n%s", out)
	}
	out, _ = fc.mustRun("", "consume", table, "--from", "earliest", "--limit", "200", "-o", "json")
	if got := parseConsumed(t, out); len(got) != 200 {
		t.Fatalf("consumed %d rows after the move, want 200", len(got))
	}
	// refusals
	code, _, errOut := runCLI(t, "", "table", "reassign", table, "--bucket", "0", "--replicas", "99", "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, "node 99") {
		t.Fatalf("a move to an unknown node: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "table", "reassign", table, "--bucket", "0", "--server", fc.server)
	if code != 2 || !strings.Contains(errOut, "--replicas") {
		t.Fatalf("no --replicas: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "table", "reassign", table, "--bucket", "0", "--replicas", "1", "--throttle", "fast", "--server", fc.server)
	if code != 2 || !strings.Contains(errOut, "--throttle") {
		t.Fatalf("a bad throttle: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "reassign", "cancel", table, "--bucket", "0", "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, "not moving") {
		t.Fatalf("cancel without a move: exit %d, %s", code, errOut)
	}

	// a plan file, and a move cancelled while it waits its turn behind
	// --max-moves 1 (a move to the same replicas in another order runs
	// first and completes at once: both in sync)
	plan := filepath.Join(t.TempDir(), "plan.json")
	moves := []client.BucketMove{{Database: fc.db, Table: name, Bucket: 0, Replicas: []uint32{from}}}
	data, _ := json.Marshal(moves)
	if err := os.WriteFile(plan, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = fc.mustRun("", "table", "reassign", "--plan", plan, "--throttle", "none", "-o", "json")
	var res client.MoveResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Started)+len(res.Queued) != 1 || res.ThrottleBytesPerS != 0 {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	out, _ = fc.mustRun("", "reassign", "cancel", "--all")
	if !strings.Contains(out, "cancelled "+table+" bucket 0") && !strings.Contains(out, "no move to cancel") {
		t.Fatalf("cancel all:\n%s", out)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, buckets = fc.status(name)
		if b := buckets[0]; len(b.Replicas) == 1 && slices.Equal(b.ISR, b.Replicas) && b.Leader == b.Replicas[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after cancel all: bucket %+v", buckets[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ = fc.mustRun("", "consume", table, "--from", "earliest", "--limit", "200", "-o", "json")
	if got := parseConsumed(t, out); len(got) != 200 {
		t.Fatalf("consumed %d rows after the cancel, want 200", len(got))
	}
}

// TestRebalanceAndSettings: `floe cluster rebalance --plan` prints a plan
// (or says the cluster is balanced) without moving anything; --execute
// --wait runs it to the end; `floe cluster set leaders.auto-elect=on`
// shows in `cluster status`, and bad settings are usage errors.
func TestRebalanceAndSettings(t *testing.T) {
	fc, table := startLogTable(t, 4, 1)
	name := strings.TrimPrefix(table, fc.db+".")
	// Pile the table's four buckets on one node, so a plan has work.
	for b := range 4 {
		_, buckets := fc.status(name)
		if !slices.Equal(buckets[b].Replicas, []uint32{1}) {
			fc.mustRun("", "table", "reassign", table, "--bucket", fmt.Sprint(b), "--replicas", "1")
		}
	}
	waitBuckets := func(what string, ok func([]client.BucketStatus) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, buckets := fc.status(name)
			if ok(buckets) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: buckets %+v", what, buckets)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitBuckets("piled on node 1", func(bs []client.BucketStatus) bool {
		return !slices.ContainsFunc(bs, func(b client.BucketStatus) bool { return !slices.Equal(b.Replicas, []uint32{1}) || b.Leader != 1 })
	})
	out, _ := fc.mustRun("", "cluster", "rebalance", "--plan", "-o", "json")
	var plan client.RebalancePlan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	// The plan evens out the whole cluster (other tests' tables too):
	// node 1 holds four replicas more than it did, so it has work, and
	// afterwards the two nodes are within one replica of each other.
	spread := func(bs []client.NodeBalance) int32 {
		if len(bs) != 2 {
			t.Fatalf("the plan counts %d nodes, want 2:\n%s", len(bs), out)
		}
		return max(bs[0].Replicas, bs[1].Replicas) - min(bs[0].Replicas, bs[1].Replicas)
	}
	if len(plan.Moves) == 0 || spread(plan.Before) < 2 || spread(plan.After) > 1 || plan.Started != nil {
		t.Fatalf("plan of %d moves, spread %d before and %d after, started %+v:\n%s", len(plan.Moves), spread(plan.Before),
			spread(plan.After), plan.Started, out)
	}
	_, buckets := fc.status(name)
	if slices.ContainsFunc(buckets, func(b client.BucketStatus) bool { return b.Replicas[0] != 1 }) {
		t.Fatalf("--plan moved something: %+v", buckets)
	}
	out, _ = fc.mustRun("", "cluster", "rebalance", "--execute", "--wait", "1m")
	if !strings.Contains(out, "rebalanced:") {
		t.Fatalf("rebalance --execute --wait said:\n%s", out)
	}
	out, _ = fc.mustRun("", "cluster", "rebalance", "--plan")
	if !strings.HasPrefix(out, "balanced: nothing to move") {
		t.Fatalf("a second plan after the rebalance:\n%s", out)
	}
	_, buckets = fc.status(name)
	for _, b := range buckets {
		if b.Leader != b.Replicas[0] || len(b.ISR) != 1 {
			t.Fatalf("after the rebalance bucket %d is %+v, want led by its replica, in sync", b.Bucket, b)
		}
	}
	out, _ = fc.mustRun("", "consume", table, "--from", "earliest", "--limit", "0", "-o", "json")
	if got := parseConsumed(t, out); len(got) != 0 {
		t.Fatalf("consumed %d rows of an empty table", len(got))
	}

	out, _ = fc.mustRun("", "cluster", "set", "leaders.auto-elect=on")
	if strings.TrimSpace(out) != "leaders.auto-elect=on" {
		t.Fatalf("cluster set said %q", out)
	}
	out, _ = fc.mustRun("", "cluster", "status")
	if !strings.Contains(out, "auto-elect leaders") || !strings.Contains(out, "on\n") || !strings.Contains(out, "0 running, 0 waiting") {
		t.Fatalf("cluster status:\n%s", out)
	}
	fc.mustRun("", "cluster", "set", "leaders.auto-elect=off")
	for _, bad := range []string{"leaders.auto-elect=maybe", "log.ttl=1d", "leaders.auto-elect"} {
		code, _, errOut := runCLI(t, "", "cluster", "set", bad, "--server", fc.server)
		if code != 2 || !strings.Contains(errOut, "leaders.auto-elect") {
			t.Fatalf("cluster set %s: exit %d, %s", bad, code, errOut)
		}
	}
	code, _, errOut := runCLI(t, "", "cluster", "rebalance", "--plan", "--execute", "--server", fc.server)
	if code != 2 || !strings.Contains(errOut, "one or the other") {
		t.Fatalf("--plan with --execute: exit %d, %s", code, errOut)
	}
}
