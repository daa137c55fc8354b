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
