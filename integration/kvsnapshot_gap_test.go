package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRestoredLeaderKeepsRemoteStart (issue 30, remote storage 5): a
// primary-key bucket's follower is wiped and restores the newest KV
// snapshot, taken at the high watermark, so its log starts at the
// snapshot's offset S, past the remote end R (the leader's active segment
// was never uploaded). Once it leads and uploads, the remote log must keep
// its older segments (it still starts at 0) and continue after the gap
// [R, S); the other replica, the only one left holding the changelog in
// the gap, must not delete it by local retention, which now runs against
// a remote end past it. Before the fix the new leader's first upload
// dropped the older segments (the remote start jumped to S) and the other
// replica's retention deleted [R, S) as if remote storage held it.
func TestRestoredLeaderKeepsRemoteStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster, wipes one node and kills another")
	}
	f := newSnapshotFixture(t, "gap")
	f.upsertRound(0)
	f.upsertRound(1)
	f.waitSnapshotAndTiered()
	f.upsertRound(2)
	// A snapshot at the high watermark: with no write after it, its offset
	// lies in the leader's active segment, past anything uploaded.
	var snap int64
	waitFor(t, 60*time.Second, "a KV snapshot at the high watermark", func() bool {
		v := f.view()
		n := len(v.record.GetKvSnapshots())
		if n == 0 {
			return false
		}
		snap = v.record.KvSnapshots[n-1].Offset
		return snap == v.hw
	})
	v := f.view()
	target := f.follower()
	var other *Node
	for _, id := range v.record.Replicas {
		if id != v.record.Leader && id != target.ID {
			other = f.c.Nodes[id-1]
		}
	}
	t.Logf("snapshot at %d; wiping node %d, node %d holds the gap", snap, target.ID, other.ID)
	f.c.Kill(target)
	f.c.Wipe(target)
	f.c.Restart(target)
	waitFor(t, 60*time.Second, "the wiped replica to restore from a KV snapshot", func() bool {
		return strings.Contains(readLog(t, target), "restored KV store from a snapshot")
	})
	f.leadAndCheck(target, 2)
	// The old leader, killed, uploaded what it sealed: the remote end
	// before the gap.
	remoteEnd := f.view().record.GetRemoteLog().GetEndOffset()
	if remoteEnd >= snap {
		t.Fatalf("remote end %d is not before the snapshot at %d: no gap to test", remoteEnd, snap)
	}
	t.Logf("node %d leads; the remote log ends at %d, before the gap", target.ID, remoteEnd)

	// The restored leader writes and uploads from its log's start on.
	f.upsertRound(3)
	waitFor(t, 60*time.Second, "the restored leader to upload past the gap", func() bool {
		v := f.view()
		return v.record.GetLeader() == target.ID && v.record.GetRemoteLog().GetLeaderEpoch() == v.record.GetLeaderEpoch() &&
			v.record.GetRemoteLog().GetEndOffset() > snap
	})
	rl := f.view().record.GetRemoteLog()
	t.Logf("remote log after the restored leader's uploads: %v", rl)
	if rl.GetStartOffset() != 0 || rl.GetRunStartOffset() != snap {
		t.Fatalf("remote log [%d, %d) covered from %d; want it to start at 0 still, covered from the snapshot at %d",
			rl.GetStartOffset(), rl.GetEndOffset(), rl.GetRunStartOffset(), snap)
	}

	// The other replica's retention runs against each new remote end (as
	// the leader's does: it deletes what it uploaded past the gap); it
	// must keep the gap's changelog. Its deletions stop at its oldest
	// segment, in the gap, so there is no deletion of its own to wait
	// for: wait for the leader's, then for two more write rounds each
	// tiered in a commit of the remote log, which the other replica
	// applies as it comes.
	waitFor(t, 60*time.Second, "the restored leader to delete uploaded segments locally", func() bool {
		return f.view().localStart > snap
	})
	for round := 4; round <= 5; round++ {
		version := f.view().record.GetRemoteLog().GetVersion()
		f.upsertRound(round)
		waitFor(t, 60*time.Second, fmt.Sprintf("a commit of the remote log after round %d", round), func() bool {
			return f.view().record.GetRemoteLog().GetVersion() > version
		})
	}
	dir := filepath.Join(other.DataDir, "tablet", fmt.Sprintf("t%d-b0", f.tbl.ID()))
	bases := segmentBases(t, dir)
	if len(bases) == 0 || bases[0] > remoteEnd {
		t.Fatalf("node %d's log starts at %v, past the remote end %d before the gap: it deleted the only copy of [%d, %d)",
			other.ID, bases[:min(len(bases), 1)], remoteEnd, remoteEnd, snap)
	}
	t.Logf("node %d keeps its log from %d (segments %d)", other.ID, bases[0], len(bases))
}

// segmentBases lists the base offsets of the log segments in dir, lowest
// first.
func segmentBases(t *testing.T, dir string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		if base, err := strconv.ParseInt(name, 10, 64); err == nil {
			out = append(out, base)
		}
	}
	slices.Sort(out)
	return out
}
