package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// partLogSchema is the schema of the partitioned log tables: dt is the
// partition column.
const partLogSchema = "dt STRING NOT NULL, id BIGINT NOT NULL, payload STRING"

// startTieredCluster starts 3 nodes tiering to one shared folder every
// 200 ms, and returns the cluster and that folder.
func startTieredCluster(t *testing.T) (*Cluster, string) {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "remote")
	return StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--remote-dir", remote, "--tiering-interval", "200ms"}}), remote
}

// createPartitioned creates spec's database if needed and the table, and
// opens it.
func createPartitioned(t *testing.T, ctx context.Context, cl *client.Client, spec client.TableSpec) *client.Table {
	t.Helper()
	if err := cl.Admin().CreateDatabase(ctx, spec.Database, client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, spec); err != nil {
		t.Fatalf("create table %s.%s: %v", spec.Database, spec.Name, err)
	}
	tbl, err := cl.Table(ctx, spec.Database, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !tbl.Partitioned() {
		t.Fatalf("table %s.%s is not partitioned", spec.Database, spec.Name)
	}
	return tbl
}

// encodePartRow encodes (dt, id, payload) of partLogSchema.
func encodePartRow(tbl *client.Table, dt string, id int64, payload string) ([]byte, error) {
	enc := tbl.NewRowEncoder()
	enc.SetString(0, dt)
	enc.SetInt64(1, id)
	enc.SetString(2, payload)
	return enc.Finish(nil)
}

// partRecord is one record read from a partition.
type partRecord struct {
	partition string // as the scanner named it
	bucket    int32
	offset    int64
	change    record.ChangeType
	dt        string // the row's partition column
	id        int64
	row       []byte
}

// readPartitions reads every bucket of the named partitions (canonical
// names, dt=...) from the earliest offset up to their high watermarks,
// checking offsets only rise.
func readPartitions(t *testing.T, ctx context.Context, tbl *client.Table, names []string) []partRecord {
	t.Helper()
	sc, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for _, name := range names {
		for b := range tbl.Buckets() {
			if err := sc.SubscribePartition(ctx, name, b, client.Earliest()); err != nil {
				t.Fatalf("subscribe %s bucket %d: %v", name, b, err)
			}
		}
	}
	type key struct {
		partition string
		bucket    int32
	}
	last := map[key]int64{}
	var out []partRecord
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := true
		for _, name := range names {
			for b := range tbl.Buckets() {
				hw, ok := sc.PartitionHighWatermark(name, b)
				pos, resolved := sc.PartitionPosition(name, b)
				if !ok || !resolved || pos < hw {
					done = false
				}
			}
		}
		if done {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading partitions %v: the high watermarks not reached in 60 s (%d records read)", names, len(out))
		}
		recs, err := sc.Poll(ctx)
		if err != nil {
			t.Fatalf("reading partitions %v: %v", names, err)
		}
		for _, r := range recs {
			k := key{r.Partition, r.Bucket}
			if prev, seen := last[k]; seen && r.Offset <= prev {
				t.Fatalf("%s bucket %d: offset %d after %d", r.Partition, r.Bucket, r.Offset, prev)
			}
			last[k] = r.Offset
			v := record.NewRowView(tbl.Schema(), r.Row)
			out = append(out, partRecord{partition: r.Partition, bucket: r.Bucket, offset: r.Offset, change: r.Change,
				dt: v.String(0), id: v.Int64(1), row: r.Row})
		}
	}
}

// replicaDirs lists the replica folders of the buckets keyed by id (a
// table's or a partition's) on every node.
func replicaDirs(t *testing.T, c *Cluster, id uint64) []string {
	t.Helper()
	var out []string
	for _, nd := range c.Nodes {
		dirs, err := filepath.Glob(filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b*", id)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dirs...)
	}
	return out
}

// remoteObjects lists the objects the store in folder remote holds of
// the buckets keyed by id whose key below b<n>/ starts with prefix ("log/",
// "kv/"; "" for all).
func remoteObjects(t *testing.T, remote string, id uint64, prefix string) []string {
	t.Helper()
	roots, err := filepath.Glob(filepath.Join(remote, "*", fmt.Sprintf("t%d", id)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if _, rest, ok := strings.Cut(filepath.ToSlash(rel), "/"); ok && strings.HasPrefix(rest, prefix) {
				out = append(out, rel)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return out
}

// partitionsByName lists a table's partitions by name.
func partitionsByName(ctx context.Context, cl *client.Client, db, table string) (map[string]client.PartitionInfo, error) {
	parts, err := cl.Admin().ListPartitions(ctx, db, table)
	if err != nil {
		return nil, err
	}
	out := make(map[string]client.PartitionInfo, len(parts))
	for _, p := range parts {
		if _, dup := out[p.Name]; dup {
			return nil, fmt.Errorf("partition %s listed twice", p.Name)
		}
		out[p.Name] = p
	}
	return out, nil
}

// dropAndWaitGone drops a partition and waits until its replica folders
// are gone from every node and its objects from the store.
func dropAndWaitGone(t *testing.T, ctx context.Context, c *Cluster, cl *client.Client, remote, db, table string, p client.PartitionInfo) {
	t.Helper()
	if err := cl.Admin().DropPartition(ctx, db, table, p.Name); err != nil {
		t.Fatalf("drop %s of %s.%s: %v", p.Name, db, table, err)
	}
	waitForNil(t, 30*time.Second, fmt.Sprintf("the folders and remote objects of %s (id %d) deleted", p.Name, p.ID), func() error {
		dirs, objs := replicaDirs(t, c, p.ID), remoteObjects(t, remote, p.ID, "")
		if len(dirs) > 0 || len(objs) > 0 {
			return fmt.Errorf("folders %v and %d remote objects left", dirs, len(objs))
		}
		return nil
	})
}

// lifeDays are the partitions of the lifecycle test's tables.
var lifeDays = []string{"2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"}

// TestPartitionLifecycle: on a 3-node cluster tiering to a folder,
//   - two writers of a partitioned log table meeting the same new
//     partitions create each once; every row reads back once, from its
//     own partition, reading every partition or the ones a filter (the
//     SDK's, and floe consume --partition) passes;
//   - upserts of a partitioned primary-key table land in the partition of
//     their key: lookups find the last value, a key of a missing
//     partition has no row, each partition's changelog holds its keys;
//   - dropping a partition (of each table, tiered, with KV snapshots)
//     deletes its folders on every node and its remote objects, and
//     leaves the other partitions whole;
//   - auto-partitioning (hour, num-precreate=3, num-retention=1) creates
//     the current hour and the next two, drops an hour far past added by
//     hand, and keeps a partition whose value is not an hour.
func TestPartitionLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c, remote := startTieredCluster(t)
	ctx := t.Context()
	cl := c.Client(ctx)
	// Created first: the controller works on it while the rest runs.
	auto := createPartitioned(t, ctx, cl, client.TableSpec{Database: "life", Name: "hourly", Schema: partLogSchema,
		PartitionKeys: []string{"dt"}, Buckets: 1, Replication: 3, Properties: map[string]string{
			"auto-partition.time-unit": "hour", "auto-partition.num-precreate": "3", "auto-partition.num-retention": "1"}})
	startHour := time.Now()

	events := createPartitioned(t, ctx, cl, client.TableSpec{Database: "life", Name: "events", Schema: partLogSchema,
		PartitionKeys: []string{"dt"}, Buckets: 2, Replication: 3, Properties: map[string]string{
			"log.segment.bytes": "64KiB", "log.local.segments": "1"}})
	writeLifeEvents(t, ctx, events)
	checkLifeEvents(t, ctx, c, events)

	users := createPartitioned(t, ctx, cl, client.TableSpec{Database: "life", Name: "users",
		Schema:        "dt STRING NOT NULL, id BIGINT NOT NULL, v BIGINT, pad STRING, PRIMARY KEY (dt, id)",
		PartitionKeys: []string{"dt"}, Buckets: 2, Replication: 3, Properties: map[string]string{
			"log.segment.bytes": "64KiB", "log.local.segments": "1", "kv.snapshot.interval": "1s"}})
	writeAndCheckLifeUsers(t, ctx, users)

	// A second handle, whose lookuper has the first day's partition too.
	users2, err := cl.Table(ctx, "life", "users")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := users2.NewLookuper(client.LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	batchKeys := [][]byte{lifeUserKey(t, users2, lifeDays[0], 7), lifeUserKey(t, users2, lifeDays[1], 7)}
	if rows, err := batch.LookupBatch(ctx, batchKeys); err != nil || rows[0] == nil || rows[1] == nil {
		t.Fatalf("lookup batch: %x, %v", rows, err)
	}
	dropLifePartitions(t, ctx, c, cl, remote, events, users)
	checkLookupsAfterDrop(t, ctx, users, batch, batchKeys)
	checkAutoPartitions(t, ctx, c, cl, auto, startHour)
}

// lifeEventsPerDay is how many rows of the events table each day has.
const lifeEventsPerDay = 400

// writeLifeEvents writes rows 0..4*lifeEventsPerDay of the events table,
// id's day lifeDays[id%4], from two writers at once, each waiting for
// every acknowledgment.
func writeLifeEvents(t *testing.T, ctx context.Context, tbl *client.Table) {
	t.Helper()
	const writers = 2
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			errs <- func() error {
				aw, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
				if err != nil {
					return err
				}
				defer aw.Close(ctx)
				var futs []*client.AppendFuture
				for id := int64(w); id < 4*lifeEventsPerDay; id += writers {
					row, err := encodePartRow(tbl, lifeDays[id%4], id, noise(id, 1000))
					if err != nil {
						return err
					}
					f, err := aw.Append(ctx, row)
					if err != nil {
						return fmt.Errorf("append %d: %w", id, err)
					}
					futs = append(futs, f)
				}
				for _, f := range futs {
					if _, err := f.Wait(ctx); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// checkLifeEvents checks the events table's partitions (one per day, made
// on write, each once) and reads them back: all, then the ones filters
// pass, with the SDK and with floe consume.
func checkLifeEvents(t *testing.T, ctx context.Context, c *Cluster, tbl *client.Table) {
	t.Helper()
	parts, err := tbl.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ids := map[uint64]bool{}
	for _, p := range parts {
		names = append(names, p.Name)
		if p.Origin != "on-write" || p.ID <= tbl.TableID() || ids[p.ID] {
			t.Fatalf("partition %+v: want one made on write, with an id of its own above the table's %d", p, tbl.TableID())
		}
		ids[p.ID] = true
	}
	want := []string{"dt=2026-12-01", "dt=2026-12-02", "dt=2026-12-03", "dt=2026-12-04"}
	if !slices.Equal(names, want) {
		t.Fatalf("partitions %v, want %v", names, want)
	}
	// wantIDs are the ids of the days a filter keeps.
	wantIDs := func(days ...string) map[int64]bool {
		out := map[int64]bool{}
		for id := range int64(4 * lifeEventsPerDay) {
			if slices.Contains(days, lifeDays[id%4]) {
				out[id] = true
			}
		}
		return out
	}
	checkOnce := func(what string, recs []partRecord, want map[int64]bool) {
		t.Helper()
		seen := map[int64]bool{}
		for _, r := range recs {
			if r.partition != "dt="+r.dt || r.dt != lifeDays[r.id%4] || seen[r.id] || !want[r.id] {
				t.Fatalf("%s: row %d of day %s read from %s bucket %d offset %d (read before: %v, wanted: %v)",
					what, r.id, r.dt, r.partition, r.bucket, r.offset, seen[r.id], want[r.id])
			}
			seen[r.id] = true
		}
		if len(seen) != len(want) {
			t.Fatalf("%s: %d rows read, want %d", what, len(seen), len(want))
		}
	}
	checkOnce("every partition", readPartitions(t, ctx, tbl, names), wantIDs(lifeDays...))

	match, err := tbl.PartitionFilter([]string{"dt>=2026-12-03", "dt=2026-12-01"})
	if err != nil {
		t.Fatal(err)
	}
	var pruned []string
	for _, p := range parts {
		if match(p) {
			pruned = append(pruned, p.Name)
		}
	}
	if want := []string{"dt=2026-12-01", "dt=2026-12-03", "dt=2026-12-04"}; !slices.Equal(pruned, want) {
		t.Fatalf("the filter passed %v, want %v", pruned, want)
	}
	checkOnce("the partitions a filter passed", readPartitions(t, ctx, tbl, pruned), wantIDs("2026-12-01", "2026-12-03", "2026-12-04"))

	out := c.MustCLI("consume", "life.events", "--partition", "dt<2026-12-03/dt!=2026-12-01", "--partition", "2026-12-04",
		"--columns", "dt,id")
	var recs []partRecord
	for line := range strings.Lines(out) {
		var r struct {
			Partition string `json:"_partition"`
			Bucket    int32  `json:"_bucket"`
			Offset    int64  `json:"_offset"`
			Dt        string `json:"dt"`
			ID        int64  `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("consume line %q: %v", line, err)
		}
		recs = append(recs, partRecord{partition: r.Partition, bucket: r.Bucket, offset: r.Offset, dt: r.Dt, id: r.ID})
	}
	checkOnce("floe consume --partition", recs, wantIDs("2026-12-02", "2026-12-04"))
}

// lifeUsersPerDay is how many keys each day of the users table has.
const lifeUsersPerDay = 300

// writeAndCheckLifeUsers upserts every key (dt, id) of three days twice,
// round r setting v to r*1000+id, and checks lookups and each
// partition's changelog.
func writeAndCheckLifeUsers(t *testing.T, ctx context.Context, tbl *client.Table) {
	t.Helper()
	days := lifeDays[:3]
	row := func(dt string, id, v int64) []byte {
		enc := tbl.NewRowEncoder()
		enc.SetString(0, dt)
		enc.SetInt64(1, id)
		enc.SetInt64(2, v)
		enc.SetString(3, noise(id, 500))
		r, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for round := range int64(2) {
		var futs []*client.UpsertFuture
		for _, day := range days {
			for id := range int64(lifeUsersPerDay) {
				f, err := w.Upsert(ctx, row(day, id, round*1000+id))
				if err != nil {
					t.Fatal(err)
				}
				futs = append(futs, f)
			}
		}
		for _, f := range futs {
			if _, err := f.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	l, err := tbl.NewLookuper(client.LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keyOf := func(dt string, id int64) []byte {
		k, err := tbl.PrimaryKeyOf(nil, row(dt, id, 0))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, day := range days {
		for id := range int64(lifeUsersPerDay) {
			got, found, err := l.Lookup(ctx, keyOf(day, id))
			if err != nil || !found {
				t.Fatalf("lookup (%s, %d): found %v, %v", day, id, found, err)
			}
			v := record.NewRowView(tbl.Schema(), got)
			if v.String(0) != day || v.Int64(1) != id || v.Int64(2) != 1000+id {
				t.Fatalf("lookup (%s, %d): row (%s, %d, %d)", day, id, v.String(0), v.Int64(1), v.Int64(2))
			}
		}
	}
	if _, found, err := l.Lookup(ctx, keyOf(lifeDays[3], 1)); err != nil || found {
		t.Fatalf("lookup of a key of a partition that does not exist: found %v, %v", found, err)
	}

	// Each partition's changelog holds its keys only: replayed, every key
	// of its day ends at the second round's value.
	var names []string
	for _, day := range days {
		names = append(names, "dt="+day)
	}
	final := map[string]int64{}
	for _, r := range readPartitions(t, ctx, tbl, names) {
		if r.partition != "dt="+r.dt {
			t.Fatalf("changelog record of (%s, %d) in %s", r.dt, r.id, r.partition)
		}
		k := fmt.Sprintf("%s/%d", r.dt, r.id)
		switch r.change {
		case record.Insert, record.UpdateAfter:
			final[k] = record.NewRowView(tbl.Schema(), r.row).Int64(2)
		case record.Delete:
			delete(final, k)
		}
	}
	if len(final) != len(days)*lifeUsersPerDay {
		t.Fatalf("the changelogs replay to %d keys, want %d", len(final), len(days)*lifeUsersPerDay)
	}
	for k, v := range final {
		var dt string
		var id int64
		if _, err := fmt.Sscanf(strings.Replace(k, "/", " ", 1), "%s %d", &dt, &id); err != nil || v != 1000+id {
			t.Fatalf("key %s replays to %d", k, v)
		}
	}
}

// lifeUserRow is the row (dt, id, v) of the users table.
func lifeUserRow(t *testing.T, tbl *client.Table, dt string, id, v int64) []byte {
	t.Helper()
	enc := tbl.NewRowEncoder()
	enc.SetString(0, dt)
	enc.SetInt64(1, id)
	enc.SetInt64(2, v)
	r, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lifeUserKey is the primary key (dt, id) of the users table.
func lifeUserKey(t *testing.T, tbl *client.Table, dt string, id int64) []byte {
	t.Helper()
	k, err := tbl.PrimaryKeyOf(nil, lifeUserRow(t, tbl, dt, id, 0))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// checkLookupsAfterDrop looks up keys of the users table's dropped first
// day with handles that had loaded its partition before the drop (users,
// and batch's): they have no row, in a lookup and in a batch; once a
// partition of that day is made again (by a writer), its row is found.
func checkLookupsAfterDrop(t *testing.T, ctx context.Context, users *client.Table, batch *client.Lookuper, batchKeys [][]byte) {
	t.Helper()
	rows, err := batch.LookupBatch(ctx, batchKeys)
	if err != nil || rows[0] != nil || rows[1] == nil {
		t.Fatalf("lookup batch of a key of the dropped dt=%s and one of dt=%s: %x, %v", lifeDays[0], lifeDays[1], rows, err)
	}
	l, err := users.NewLookuper(client.LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := lifeUserKey(t, users, lifeDays[0], 7)
	if got, found, err := l.Lookup(ctx, key); err != nil || found {
		t.Fatalf("lookup of a key of the dropped dt=%s: %x, found %v, %v", lifeDays[0], got, found, err)
	}
	w, err := users.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	f, err := w.Upsert(ctx, lifeUserRow(t, users, lifeDays[0], 7, 4242))
	if err == nil {
		_, err = f.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("upsert into dt=%s made again: %v", lifeDays[0], err)
	}
	got, found, err := l.Lookup(ctx, key)
	if err != nil || !found || record.NewRowView(users.Schema(), got).Int64(2) != 4242 {
		t.Fatalf("lookup of a key of dt=%s made again: %x, found %v, %v", lifeDays[0], got, found, err)
	}
	rows, err = batch.LookupBatch(ctx, batchKeys)
	if err != nil || rows[0] == nil || record.NewRowView(users.Schema(), rows[0]).Int64(2) != 4242 {
		t.Fatalf("lookup batch of a key of dt=%s made again: %x, %v", lifeDays[0], rows, err)
	}
}

// dropLifePartitions drops the first day of the events table once it has
// tiered segments, and of the users table once it has KV snapshots in the
// store, and checks each is gone everywhere and the other days are whole.
func dropLifePartitions(t *testing.T, ctx context.Context, c *Cluster, cl *client.Client, remote string, events, users *client.Table) {
	t.Helper()
	for _, tc := range []struct {
		tbl    *client.Table
		prefix string // of the remote objects to wait for
	}{{events, "log/"}, {users, "kv/"}} {
		info := tc.tbl.Info()
		parts, err := partitionsByName(ctx, cl, info.Database, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		victim := parts["dt="+lifeDays[0]]
		delete(parts, victim.Name)
		if n := len(replicaDirs(t, c, victim.ID)); n != 2*3 {
			t.Fatalf("%s.%s %s: %d replica folders before the drop, want 2 buckets times 3", info.Database, info.Name, victim.Name, n)
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("%s.%s %s to have %s objects in the store", info.Database, info.Name, victim.Name, tc.prefix), func() bool {
			return len(remoteObjects(t, remote, victim.ID, tc.prefix)) > 0
		})
		t.Logf("dropping %s.%s %s (id %d): %d replica folders, %d remote objects", info.Database, info.Name, victim.Name, victim.ID,
			len(replicaDirs(t, c, victim.ID)), len(remoteObjects(t, remote, victim.ID, "")))
		dropAndWaitGone(t, ctx, c, cl, remote, info.Database, info.Name, victim)

		after, err := partitionsByName(ctx, cl, info.Database, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(after, parts, func(a, b client.PartitionInfo) bool { return a.ID == b.ID }) {
			t.Fatalf("%s.%s: partitions %v after dropping %s, want %v", info.Database, info.Name, slices.Sorted(maps.Keys(after)),
				victim.Name, slices.Sorted(maps.Keys(parts)))
		}
		for _, p := range parts {
			if n := len(replicaDirs(t, c, p.ID)); n != 2*3 {
				t.Fatalf("%s.%s %s: %d replica folders after dropping %s, want 6", info.Database, info.Name, p.Name, n, victim.Name)
			}
		}
		// A new handle (tc.tbl keeps the handles of partitions it read).
		fresh, err := cl.Table(ctx, info.Database, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fresh.Partition(ctx, victim.Name); !errors.Is(err, client.ErrUnknownPartition) {
			t.Fatalf("%s.%s: the dropped %s opened: %v", info.Database, info.Name, victim.Name, err)
		}
	}
	// The other days of the events table read back whole.
	recs := readPartitions(t, ctx, events, []string{"dt=" + lifeDays[1], "dt=" + lifeDays[3]})
	if len(recs) != 2*lifeEventsPerDay {
		t.Fatalf("%d rows read from two days left, want %d", len(recs), 2*lifeEventsPerDay)
	}
}

// waitForNil polls cond until it returns nil, and fails the test with
// its last error after timeout.
func waitForNil(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	var last error
	deadline := time.Now().Add(timeout)
	for {
		if last = cond(); last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hourValue is the hour partition value of t, in UTC.
func hourValue(t time.Time) string { return t.UTC().Format("2006-01-02T15") }

// checkAutoPartitions checks the hourly table's auto-partitioning: the
// current hour and the next two, made by the controller (allowing for the
// hour turning since start: the hour before is kept by num-retention=1);
// an hour of 2020 added by hand is dropped, with its folders; a value that
// is no hour (dt=backfill) is kept.
func checkAutoPartitions(t *testing.T, ctx context.Context, c *Cluster, cl *client.Client, tbl *client.Table, start time.Time) {
	t.Helper()
	const db, name = "life", "hourly"
	// expected says whether the hour-form partitions are those of the hour
	// of now and the two after it, and maybe the one before if the hour
	// turned since start.
	expected := func(parts map[string]client.PartitionInfo) error {
		now := time.Now()
		want := map[string]bool{}
		for i := range 3 {
			want["dt="+hourValue(now.Add(time.Duration(i)*time.Hour))] = true
		}
		before := "dt=" + hourValue(now.Add(-time.Hour))
		for n, p := range parts {
			switch {
			case want[n] && p.Origin == "auto":
				delete(want, n)
			case n == before && hourValue(start) != hourValue(now) && p.Origin == "auto":
			case n == "dt=backfill" || n == "dt=2020-01-01T00":
			default:
				return fmt.Errorf("partition %+v not expected at %s", p, now.UTC().Format(time.RFC3339))
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("partitions %v missing at %s", slices.Sorted(maps.Keys(want)), now.UTC().Format(time.RFC3339))
		}
		return nil
	}
	var parts map[string]client.PartitionInfo
	waitForNil(t, 30*time.Second, "the controller to create the current hour's partition and the next two's", func() error {
		var err error
		if parts, err = partitionsByName(ctx, cl, db, name); err != nil {
			return err
		}
		return expected(parts)
	})
	old, err := cl.Admin().CreatePartition(ctx, db, name, "dt=2020-01-01T00")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreatePartition(ctx, db, name, "backfill"); err != nil {
		t.Fatal(err)
	}
	// The rounds that drop it make any partition missing (the hour may
	// have turned), and no more: one too many would stay.
	waitForNil(t, 30*time.Second, "retention to drop dt=2020-01-01T00 and its folders", func() error {
		var err error
		if parts, err = partitionsByName(ctx, cl, db, name); err != nil {
			return err
		}
		if _, kept := parts[old.Name]; kept {
			return fmt.Errorf("%s kept", old.Name)
		}
		if dirs := replicaDirs(t, c, old.ID); len(dirs) > 0 {
			return fmt.Errorf("%s dropped, its folders %v left", old.Name, dirs)
		}
		return expected(parts)
	})
	if p, ok := parts["dt=backfill"]; !ok || p.Origin != "explicit" {
		t.Fatalf("dt=backfill: %+v, %v: want it kept", p, ok)
	}
	if _, err := tbl.Partition(ctx, "dt=2020-01-01T00"); !errors.Is(err, client.ErrUnknownPartition) {
		t.Fatalf("opening the partition retention dropped: %v", err)
	}
	t.Logf("hourly partitions: %v", slices.Sorted(maps.Keys(parts)))
}
