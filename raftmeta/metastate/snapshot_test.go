package metastate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/floedb/floe/transport/pb"
)

// populate applies a mix of every command.
func populate(h *harness, prefix string) {
	h.t.Helper()
	h.ok(initCluster("cluster-" + prefix))
	for i := 1; i <= 4; i++ {
		h.ok(registerNode(uint32(i), fmt.Sprint("rack", i%2), RoleTablet, RoleMeta))
	}
	for i := range 3 {
		db := fmt.Sprintf("%s_db%d", prefix, i)
		h.ok(withID("db-"+db, createDB(db)))
		for j := range 3 {
			h.ok(createTable(ordersTable(db, fmt.Sprint("t", j), func(c *pb.CreateTable) { c.Buckets = int32(j + 2) })))
		}
	}
	h.ok(dropTable(prefix+"_db1", "t1", false))
	h.ok(dropDB(prefix+"_db2", true, false))
	h.apply(withID("refused", createDB("no way")))
}

func TestReopenKeepsEverything(t *testing.T) {
	h := newHarness(t)
	populate(h, "a")
	before, beforeFile := readDump(t, h.s), fullDump(t, h.s)
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(h.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h.s = s
	if after := readDump(t, s); after != before {
		t.Errorf("reads differ after reopen:\n%s\n%s", before, after)
	}
	if fullDump(t, s) != beforeFile {
		t.Errorf("file differs after reopen")
	}
	if s.AppliedIndex() != h.index {
		t.Errorf("applied index %d, want %d", s.AppliedIndex(), h.index)
	}
	// Raft replays the tail after a restart: no-ops.
	res := h.applyAt(h.index, h.nowMs, createDB("late"))
	wantRefused(t, res, pb.ErrorCode_ERROR_CODE_INTERNAL, "already applied")
	// Request ids survive the restart.
	if res := h.apply(withID("refused", createDB("ok_now"))); !strings.Contains(res.GetError(), "no way") {
		t.Errorf("remembered result lost: %v", res)
	}
}

func TestSnapshotRestore(t *testing.T) {
	src := newHarness(t)
	populate(src, "a")
	var snap bytes.Buffer
	if err := src.s.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}

	dst := newHarness(t)
	populate(dst, "b") // a state of its own, replaced whole
	dst.ok(createDB("only_in_dst"))
	if err := dst.s.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if a, b := readDump(t, src.s), readDump(t, dst.s); a != b {
		t.Errorf("reads differ:\n%s\n%s", a, b)
	}
	if fullDump(t, src.s) != fullDump(t, dst.s) {
		t.Errorf("files differ")
	}
	if dst.s.AppliedIndex() != src.index {
		t.Errorf("applied index %d, want %d", dst.s.AppliedIndex(), src.index)
	}
	if _, err := dst.s.Database("only_in_dst"); err == nil {
		t.Errorf("old state survived the restore")
	}
	// Both go on identically from there.
	dst.index, dst.nowMs = src.index, src.nowMs
	for _, h := range []*harness{src, dst} {
		h.ok(createDB("next"))
		h.ok(createTable(ordersTable("next", "t", nil)))
		h.apply(withID("db-a_db0", createDB("again")))
	}
	if fullDump(t, src.s) != fullDump(t, dst.s) {
		t.Errorf("files differ after applying on")
	}
	// A restored state survives a reopen.
	if err := dst.s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dst.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if readDump(t, s) != readDump(t, src.s) {
		t.Errorf("reads differ after reopen")
	}
	if left, _ := filepath.Glob(dst.path + restoreTempSuffix + "*"); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	foreign, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	populate(h, "a")
	var snap bytes.Buffer
	if err := h.s.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	tests := map[string][]byte{
		"empty":         nil,
		"garbage":       bytes.Repeat([]byte("floe"), 4096),
		"another bbolt": foreign,
		"one page":      snap.Bytes()[:4096],
		"truncated":     snap.Bytes()[:snap.Len()/3],
	}
	before := readDump(t, h.s)
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if err := h.s.Restore(bytes.NewReader(data)); err == nil {
				t.Fatal("restored")
			}
			if after := readDump(t, h.s); after != before {
				t.Errorf("state changed")
			}
		})
	}
	// Cut at every page: refused, or (when only unused pages are cut) the
	// whole state; never a crash.
	full := snap.Bytes()
	for cut := 4096; cut < len(full); cut += 4096 {
		if err := h.s.Restore(bytes.NewReader(full[:cut])); err == nil {
			if got := readDump(t, h.s); got != before {
				t.Fatalf("cut at %d restored a different state", cut)
			}
		}
	}
	h.index = h.s.AppliedIndex()
	h.ok(createDB("after"))
	if left, _ := filepath.Glob(h.path + restoreTempSuffix + "*"); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

func TestOpenRemovesRestoreLeftovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	left := path + restoreTempSuffix + "123"
	if err := os.WriteFile(left, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("leftover still there: %v", err)
	}
}

func TestOpenRefusesOtherFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return putU64(b, keyFormat, formatVersion+1)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := Open(path, nil); err == nil {
		s.Close()
		t.Fatal("opened a file of another layout")
	}
}

// TestRestoreWhileReading restores again and again while readers run: every
// read sees one whole state, never a closed file.
func TestRestoreWhileReading(t *testing.T) {
	snaps := make([][]byte, 2)
	dumps := make([]string, 2)
	for i, prefix := range []string{"a", "b"} {
		h := newHarness(t)
		populate(h, prefix)
		if i == 1 {
			h.ok(createDB("extra")) // a different applied index too
		}
		var buf bytes.Buffer
		if err := h.s.WriteSnapshot(&buf); err != nil {
			t.Fatal(err)
		}
		snaps[i], dumps[i] = buf.Bytes(), readDump(t, h.s)
	}
	target := newHarness(t)
	if err := target.s.Restore(bytes.NewReader(snaps[0])); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				var dump string
				err := target.s.Read(func(v *View) error {
					d, err := viewDump(v)
					dump = d
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if dump != dumps[0] && dump != dumps[1] {
					errs <- fmt.Errorf("read a state that is neither snapshot:\n%s", dump)
					return
				}
				// The plain reads must never fail either.
				if len(target.s.Databases()) == 0 || len(target.s.Nodes()) != 4 || target.s.AppliedIndex() == 0 {
					errs <- fmt.Errorf("empty read during restore")
					return
				}
			}
		})
	}
	for i := range 30 {
		if err := target.s.Restore(bytes.NewReader(snaps[i%2])); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// viewDump renders a View the way readDump renders a State.
func viewDump(v *View) (string, error) {
	var b strings.Builder
	applied, err := v.AppliedIndex()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "applied %d cluster %q\n", applied, v.ClusterID())
	nodes, err := v.Nodes()
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		data, _ := marshal.Marshal(n)
		fmt.Fprintf(&b, "%T %x\n", n, data)
	}
	dbs, err := v.Databases()
	if err != nil {
		return "", err
	}
	for _, db := range dbs {
		data, _ := marshal.Marshal(db)
		fmt.Fprintf(&b, "%T %x\n", db, data)
		tables, err := v.Tables(db.GetName())
		if err != nil {
			return "", err
		}
		for _, tb := range tables {
			tr, buckets, err := v.Table(db.GetName(), tb.GetName())
			if err != nil {
				return "", err
			}
			data, _ := marshal.Marshal(tr)
			fmt.Fprintf(&b, "%T %x\n", tr, data)
			for _, bk := range buckets {
				data, _ := marshal.Marshal(bk)
				fmt.Fprintf(&b, "%T %x\n", bk, data)
			}
		}
	}
	return b.String(), nil
}

// TestSnapshotWhileApplying takes snapshots while commands apply: each one
// restores to exactly the commands up to its applied index.
func TestSnapshotWhileApplying(t *testing.T) {
	h := newHarness(t)
	const commands = 200
	var snaps [][]byte
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			var buf bytes.Buffer
			if err := h.s.WriteSnapshot(&buf); err != nil {
				t.Error(err)
				return
			}
			snaps = append(snaps, buf.Bytes())
		}
	})
	for i := range commands {
		if res := h.s.Apply(uint64(i+1), startMs+int64(i), mustMarshal(t, createDB(fmt.Sprint("d", i+1)))); res.GetError() != "" {
			t.Fatal(res)
		}
	}
	close(done)
	wg.Wait()
	r := newHarness(t)
	for _, snap := range snaps {
		if err := r.s.Restore(bytes.NewReader(snap)); err != nil {
			t.Fatal(err)
		}
		applied := r.s.AppliedIndex()
		dbs := r.s.Databases()
		if uint64(len(dbs)) != applied {
			t.Fatalf("applied %d with %d databases", applied, len(dbs))
		}
		for i := uint64(1); i <= applied; i++ {
			if _, err := r.s.Database(fmt.Sprint("d", i)); err != nil {
				t.Fatalf("applied %d without d%d", applied, i)
			}
		}
	}
	t.Logf("%d snapshots checked", len(snaps))
}

// TestNewTablesFillPages: the bucket records of new tables, appended in key
// order, fill their pages (bbolt's default leaves them half empty, and the
// file and every snapshot twice the size).
func TestNewTablesFillPages(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("db"))
	for i := range 5 {
		h.ok(createTable(ordersTable("db", fmt.Sprint("t", i), func(c *pb.CreateTable) { c.Buckets, c.Replication = 1000, 3 })))
	}
	var st bolt.BucketStats
	if err := h.s.view(func(tx *bolt.Tx) error { st = tx.Bucket(bucketBuckets).Stats(); return nil }); err != nil {
		t.Fatal(err)
	}
	if fill := float64(st.LeafInuse) / float64(st.LeafAlloc); fill < 0.8 {
		t.Fatalf("bucket record pages %.0f%% full (%d of %d bytes), want 80%% or more", 100*fill, st.LeafInuse, st.LeafAlloc)
	}
}
