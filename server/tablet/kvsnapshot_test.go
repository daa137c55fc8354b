package tablet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// kvRows is a store's rows as a snapshot source, in key order.
func kvRows(rows map[string]string, offset int64) tiering.KVSource {
	return func(fn func(key []byte, schemaID int16, row []byte) error) (int64, error) {
		for _, k := range slices.Sorted(maps.Keys(rows)) {
			if err := fn([]byte(k), 1, []byte(rows[k])); err != nil {
				return 0, err
			}
		}
		return offset, nil
	}
}

type restoredRows map[string]string

func (r restoredRows) Put(key []byte, _ int16, row []byte) error {
	r[string(key)] = string(row)
	return nil
}

// snapshotMeta is the metadata state machine of a cluster with tablet
// nodes 1 to 3 and one primary-key table of one bucket, applied to by
// hand.
type snapshotMeta struct {
	t     *testing.T
	st    *metastate.State
	index uint64
	table uint64
}

func newSnapshotMeta(t *testing.T) *snapshotMeta {
	st, err := metastate.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := &snapshotMeta{t: t, st: st}
	for id := uint32(1); id <= 3; id++ {
		m.apply(&pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{
			Id: id, Roles: []string{metastate.RoleTablet}, RpcAddress: fmt.Sprintf("10.0.0.%d:7000", id)}}}})
	}
	m.apply(&pb.Command{Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: "db"}}})
	res := m.apply(&pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "t",
		Columns:    []*pb.Column{{Name: "id", Type: "BIGINT"}, {Name: "v", Type: "STRING", Nullable: true}},
		PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3, Checks: metastate.CreateTableChecks}}})
	m.table = res.GetTable().GetId()
	return m
}

// apply applies cmd at the next index and fails the test if it is refused.
func (m *snapshotMeta) apply(cmd *pb.Command) *pb.CommandResult {
	m.t.Helper()
	data, err := proto.Marshal(cmd)
	if err != nil {
		m.t.Fatal(err)
	}
	m.index++
	res := m.st.Apply(m.index, 1_700_000_000_000+int64(m.index)*1000, data)
	if err := metastate.ResultError(res); err != nil {
		m.t.Fatalf("index %d: %v", m.index, err)
	}
	return res
}

// read is the bucket's committed record now.
func (m *snapshotMeta) read(context.Context) (*pb.BucketRecord, error) {
	return m.st.Bucket(m.table, 0)
}

func (m *snapshotMeta) bucket() *pb.BucketRecord {
	m.t.Helper()
	b, err := m.read(m.t.Context())
	if err != nil {
		m.t.Fatal(err)
	}
	return b
}

// commit commits a snapshot taken by the bucket's current leader on the
// list in base, as snapshotBucket does, keeping one.
func (m *snapshotMeta) commit(base *pb.BucketRecord, taken tiering.KVSnapshotResult) {
	m.t.Helper()
	m.apply(&pb.Command{Op: &pb.Command_CommitKvSnapshot{CommitKvSnapshot: &pb.CommitKVSnapshot{
		TableId: m.table, Bucket: 0, LeaderId: base.GetLeader(), LeaderEpoch: base.GetLeaderEpoch(), Retained: 1,
		ExpectedVersion: proto.Int64(metastate.KVSnapshotsVersion(base.GetKvSnapshots())),
		Snapshot:        &pb.KVSnapshot{ManifestKey: taken.ManifestKey, Offset: taken.Manifest.Offset, Rows: taken.Manifest.Rows, Bytes: taken.Manifest.Bytes},
	}}})
}

func storedKeys(t *testing.T, store tiering.ObjectStore) []string {
	t.Helper()
	var keys []string
	if err := store.List(t.Context(), "", func(o tiering.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestKVCollectDeposedLeader is issue 30's deposed leader's collection:
// leader A commits snapshot S1 at its leader epoch; the controller moves
// leadership to B, which commits S2 at the next epoch on S1's list
// (reusing most of S1's parts, dropping S1); A's collection, run late,
// must leave S2 restorable. Read now, the metadata names B: A collects
// nothing. And where A read the metadata before B took over (its check
// passed, then B committed before A's deletes), it deletes only what no
// snapshot of its list references and its own epoch or an earlier one
// wrote, never S2's new objects. B's own collection then deletes what only
// S1 used.
func TestKVCollectDeposedLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stale: A's collection reads the record as it was before B took
		// over, not the metadata now.
		stale bool
	}{{"A reads the metadata after B's commit", false}, {"B commits between A's check and its deletes", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			meta := newSnapshotMeta(t)
			store, err := tiering.NewFolder(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			cfg := tiering.KVSnapshotConfig{Store: store, Root: "c1", TableID: meta.table, Bucket: 0, TempDir: t.TempDir()}
			rows := map[string]string{}
			for i := range 20_000 {
				rows[fmt.Sprintf("key-%07d", i)] = strings.Repeat(fmt.Sprint(i%10), 40)
			}

			a := meta.bucket()
			s1, err := tiering.TakeKVSnapshot(ctx, cfg, a.GetLeaderEpoch(), nil, kvRows(rows, 1000))
			if err != nil {
				t.Fatal(err)
			}
			meta.commit(a, s1)
			asCommitted := meta.bucket() // what A's commit returned

			meta.apply(&pb.Command{Op: &pb.Command_FenceNodes{FenceNodes: &pb.FenceNodes{Gone: []uint32{a.GetLeader()}}}})
			b := meta.bucket()
			if b.GetLeader() == a.GetLeader() || b.GetLeaderEpoch() <= a.GetLeaderEpoch() {
				t.Fatalf("leadership did not move from node %d: %v", a.GetLeader(), b)
			}
			rows["key-0000100"] = "changed under B"
			s2, err := tiering.TakeKVSnapshot(ctx, cfg, b.GetLeaderEpoch(), []string{s1.ManifestKey}, kvRows(rows, 2000))
			if err != nil {
				t.Fatal(err)
			}
			if s2.ReusedParts == 0 || s2.ReusedParts == len(s2.Manifest.Parts) {
				t.Fatalf("S2 reused %d of %d parts; the test wants both kinds", s2.ReusedParts, len(s2.Manifest.Parts))
			}
			meta.commit(b, s2)

			before := storedKeys(t, store)
			readA := meta.read
			if tc.stale {
				readA = func(context.Context) (*pb.BucketRecord, error) { return asCommitted, nil }
			}
			n, err := collectKVSnapshots(ctx, cfg, a.GetLeader(), a.GetLeaderEpoch(), readA)
			switch {
			case !tc.stale && (!errors.Is(err, errDeposed) || !errors.Is(err, transport.ErrNotLeader)):
				t.Fatalf("A's collection after B's commit: %d deleted, %v; want errDeposed, NOT_LEADER", n, err)
			case !tc.stale && !slices.Equal(storedKeys(t, store), before):
				t.Fatalf("a deposed leader's collection deleted objects:\nbefore %v\nafter  %v", before, storedKeys(t, store))
			case tc.stale && err != nil:
				t.Fatal(err)
			}
			got := restoredRows{}
			if _, err := tiering.RestoreKVSnapshot(ctx, store, s2.ManifestKey, got); err != nil || !maps.Equal(map[string]string(got), rows) {
				t.Fatalf("S2, the newest committed snapshot, after A's collection: %d of %d rows, %v", len(got), len(rows), err)
			}

			n, err = collectKVSnapshots(ctx, cfg, b.GetLeader(), b.GetLeaderEpoch(), meta.read)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tiering.ReadKVManifest(ctx, store, s1.ManifestKey); !errors.Is(err, tiering.ErrNotFound) {
				t.Fatalf("B's collection kept the dropped S1 (%d deleted): %v", n, err)
			}
			got = restoredRows{}
			if _, err := tiering.RestoreKVSnapshot(ctx, store, s2.ManifestKey, got); err != nil || len(got) != len(rows) {
				t.Fatalf("S2 after B's collection: %d of %d rows, %v", len(got), len(rows), err)
			}
		})
	}
}
