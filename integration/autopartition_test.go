package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// autoRoundChanges is the most partitions one auto-partitioning round of
// the controller creates and drops in all (server/meta's
// maxAutoPartitionChanges): a kill at a count not a multiple of it falls
// within a round.
const autoRoundChanges = 64

// autoKillAfter is how many changes of a round the controller makes
// before the tests kill it, with about 40 left to make.
const autoKillAfter = 16

// killControllerWhen polls the table's partitions until cond holds of
// them, then SIGKILLs the metadata leader (the controller) and returns it
// with the partitions listed last before the kill. It fails the test when
// done holds first: the controller finished before it could be killed.
func killControllerWhen(t *testing.T, ctx context.Context, c *Cluster, cl *client.Client, db, table string,
	cond, done func(map[string]client.PartitionInfo) bool) (*Node, map[string]client.PartitionInfo) {
	t.Helper()
	leader := c.WaitLeader(30 * time.Second)
	var parts map[string]client.PartitionInfo
	deadline := time.Now().Add(30 * time.Second)
	// No pause between listings: a round makes a change every few
	// milliseconds, and the kill is to fall within one.
	for {
		var err error
		parts, err = partitionsByName(ctx, cl, db, table)
		if err == nil && cond(parts) {
			break
		}
		if err == nil && done(parts) {
			t.Fatalf("the controller finished (%d partitions) before a kill could fall within its work", len(parts))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s.%s: no moment to kill the controller in 30 s (%d partitions, %v)", db, table, len(parts), err)
		}
	}
	if now := c.Leader(); now != leader {
		t.Fatalf("the metadata leader moved from node %d to %v on its own", leader.ID, now)
	}
	c.Kill(leader)
	return leader, parts
}

// hourNames returns the names of the partitions of the hours from and to
// (UTC) included.
func hourNames(from, to time.Time) []string {
	var out []string
	for h := from.UTC().Truncate(time.Hour); !h.After(to); h = h.Add(time.Hour) {
		out = append(out, "dt="+hourValue(h))
	}
	return out
}

// checkPartitionsServed checks every partition has its bucket placed on
// every node (replication 3 of 3) and led with every replica in sync.
func checkPartitionsServed(t *testing.T, c *Cluster, parts map[string]client.PartitionInfo) error {
	for _, p := range parts {
		if p.Buckets != 1 || p.InSync != 1 || p.Offline != 0 {
			return fmt.Errorf("partition %s: %d buckets, %d in sync, %d offline", p.Name, p.Buckets, p.InSync, p.Offline)
		}
		if dirs := replicaDirs(t, c, p.ID); len(dirs) != len(c.Nodes) {
			return fmt.Errorf("partition %s (id %d): replica folders %v, want one on each node", p.Name, p.ID, dirs)
		}
	}
	return nil
}

// TestAutoPartitionAcrossControllerChange: an hourly table with 150
// partitions to precreate (three rounds of the controller at least) has
// its controller SIGKILLed within a round of creates and restarted; in the
// end the partitions are exactly the hours from the first round's to 149
// after now's, each once, with the ids of those made before the kill,
// ids drawn one after another from the table's (none made twice), and
// each bucket placed on every node, led and in sync. Then 100 hours of
// 2020 added by hand fall out of retention, the controller is SIGKILLed
// within a round of drops and restarted; in the end every one of them is
// gone with its folders on every node, and no other partition changed.
func TestAutoPartitionAcrossControllerChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and kills its metadata leader twice")
	}
	const db, table, precreate, old = "autoctl", "hourly", 150, 100
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	start := time.Now()
	tbl := createPartitioned(t, ctx, cl, client.TableSpec{Database: db, Name: table, Schema: partLogSchema,
		PartitionKeys: []string{"dt"}, Buckets: 1, Replication: 3, Properties: map[string]string{
			"auto-partition.time-unit": "hour", "auto-partition.num-precreate": fmt.Sprint(precreate),
			"auto-partition.num-retention": "0"}})

	// Creates. The node killed is back as soon as another leads: new
	// partitions need three live tablet nodes, replication being 3.
	killed, beforeKill := killControllerWhen(t, ctx, c, cl, db, table,
		func(parts map[string]client.PartitionInfo) bool { return len(parts)%autoRoundChanges >= autoKillAfter },
		func(parts map[string]client.PartitionInfo) bool { return len(parts) >= precreate })
	t.Logf("killed the controller, node %d, with %d partitions made", killed.ID, len(beforeKill))
	c.WaitLeader(30 * time.Second)
	c.Restart(killed)

	var parts map[string]client.PartitionInfo
	waitForNil(t, 90*time.Second, "every hour's partition made and served", func() error {
		var err error
		if parts, err = partitionsByName(ctx, cl, db, table); err != nil {
			return err
		}
		end := time.Now().Add((precreate - 1) * time.Hour)
		// The first round's hour is that of start, or the one after it.
		for _, from := range []time.Time{start, start.Add(time.Hour)} {
			if slices.Equal(slices.Sorted(maps.Keys(parts)), hourNames(from, end)) {
				return checkPartitionsServed(t, c, parts)
			}
		}
		return fmt.Errorf("%d partitions, want those of the %d hours from %s", len(parts), precreate, hourValue(start))
	})
	var ids []uint64
	for _, p := range parts {
		if p.Origin != "auto" {
			t.Fatalf("partition %+v not made by the controller", p)
		}
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	for i, id := range ids {
		// Nothing else draws ids in this test: a partition made twice (or
		// made, lost and made again) would leave a gap or a duplicate.
		if id != tbl.TableID()+1+uint64(i) {
			t.Fatalf("partition ids %v: want %d from %d on, one each", ids, len(ids), tbl.TableID()+1)
		}
	}
	for name, p := range beforeKill {
		if parts[name].ID != p.ID {
			t.Fatalf("partition %s had id %d before the kill, %d after", name, p.ID, parts[name].ID)
		}
	}

	// Retention drops.
	var oldNames []string
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range old {
		p, err := cl.Admin().CreatePartition(ctx, db, table, "dt="+hourValue(base.Add(time.Duration(i)*time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		oldNames = append(oldNames, p.Name)
	}
	withOld, err := partitionsByName(ctx, cl, db, table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().AlterTable(ctx, db, table, client.AlterTable{Set: map[string]string{"auto-partition.num-retention": "1"}}); err != nil {
		t.Fatal(err)
	}
	oldLeft := func(parts map[string]client.PartitionInfo) int {
		n := 0
		for name := range parts {
			if strings.HasPrefix(name, "dt=2020-") {
				n++
			}
		}
		return n
	}
	killed, beforeKill = killControllerWhen(t, ctx, c, cl, db, table,
		func(parts map[string]client.PartitionInfo) bool {
			return (old-oldLeft(parts))%autoRoundChanges >= autoKillAfter
		},
		func(parts map[string]client.PartitionInfo) bool { return oldLeft(parts) == 0 })
	t.Logf("killed the controller, node %d, with %d of %d old partitions left", killed.ID, oldLeft(beforeKill), old)
	c.WaitLeader(30 * time.Second)
	c.Restart(killed)
	waitForNil(t, 90*time.Second, "retention to drop every 2020 partition and delete its folders on every node", func() error {
		var err error
		if parts, err = partitionsByName(ctx, cl, db, table); err != nil {
			return err
		}
		if n := oldLeft(parts); n > 0 {
			return fmt.Errorf("%d of the 2020 partitions left", n)
		}
		for _, name := range oldNames {
			if dirs := replicaDirs(t, c, withOld[name].ID); len(dirs) > 0 {
				return fmt.Errorf("%s (id %d) dropped, its folders %v left", name, withOld[name].ID, dirs)
			}
		}
		return checkPartitionsServed(t, c, parts)
	})
	for name, p := range withOld {
		if q, ok := parts[name]; !strings.HasPrefix(name, "dt=2020-") && (!ok || q.ID != p.ID) {
			t.Fatalf("partition %s had id %d before retention, %+v after (kept: %v)", name, p.ID, q, ok)
		}
	}
	for name, p := range parts {
		if _, ok := withOld[name]; !ok && p.Origin != "auto" {
			// A later hour, made when the hour turned, is the only newcomer.
			t.Fatalf("partition %+v appeared during retention", p)
		}
	}
}
