package metastate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// summary names what an update lists: "nodes [1] tables [2] buckets [2/0]
// dropped [1]"; "" for none.
func summary(u *pb.MetadataUpdate) string {
	var parts []string
	add := func(name string, ids []string) {
		if len(ids) > 0 {
			parts = append(parts, fmt.Sprintf("%s [%s]", name, strings.Join(ids, " ")))
		}
	}
	var nodes, tables, buckets, dropped []string
	for _, n := range u.GetNodes() {
		nodes = append(nodes, fmt.Sprint(n.GetId()))
	}
	for _, t := range u.GetTables() {
		tables = append(tables, fmt.Sprint(t.GetId()))
	}
	for _, b := range u.GetBuckets() {
		buckets = append(buckets, fmt.Sprintf("%d/%d", b.GetTableId(), b.GetBucket()))
	}
	for _, id := range u.GetDroppedTables() {
		dropped = append(dropped, fmt.Sprint(id))
	}
	add("nodes", nodes)
	add("tables", tables)
	add("buckets", buckets)
	add("dropped", dropped)
	return strings.Join(parts, " ")
}

// feedSteps applies a mix of every command and checks what the feed
// records for each; it returns the updates recorded, by index.
func feedSteps(t *testing.T, h *harness) map[uint64]*pb.MetadataUpdate {
	t.Helper()
	steps := []struct {
		name string
		cmd  *pb.Command
		want string
	}{
		{"init cluster", initCluster("c"), ""},
		{"register node", registerNode(1, "", RoleTablet), "nodes [1]"},
		{"register node 2", registerNode(2, "", RoleTablet), "nodes [2]"},
		{"register node 3", registerNode(3, "", RoleTablet, RoleMeta), "nodes [3]"},
		{"register meta node", registerNode(9, "", RoleMeta), "nodes [9]"},
		{"create database", createDB("sales"), ""},
		{"create table", withID("ta", createTable(ordersTable("sales", "a", func(c *pb.CreateTable) { c.Buckets = 2 }))), "tables [1] buckets [1/0 1/1]"},
		{"create table again under its request id", withID("ta", createTable(ordersTable("sales", "a", nil))), ""},
		{"create table if not exists", createTable(ordersTable("sales", "a", func(c *pb.CreateTable) { c.IfNotExists = true })), ""},
		{"create table refused", createTable(ordersTable("sales", "a", nil)), ""},
		{"create another", createTable(ordersTable("sales", "b", func(c *pb.CreateTable) { c.Buckets = 1 })), "tables [2] buckets [2/0]"},
		{"allocate writer id", allocateWriterID(), ""},
		{"fence nobody", fenceNodes(), ""},
		{"fence node 1", fenceNodes(1), "buckets [1/0 1/1 2/0]"},
		{"fence node 1 again", fenceNodes(1), ""},
		{"node 1 back", fenceNodes(), ""}, // not in any ISR any more: nothing to elect
		{"drop table", dropTable("sales", "a", false), "dropped [1]"},
		{"drop table if exists", dropTable("sales", "a", true), ""},
		{"create database other", createDB("other"), ""},
		{"other.x", createTable(ordersTable("other", "x", func(c *pb.CreateTable) { c.Buckets = 1 })), "tables [3] buckets [3/0]"},
		{"other.y", createTable(ordersTable("other", "y", func(c *pb.CreateTable) { c.Buckets = 1 })), "tables [4] buckets [4/0]"},
		{"drop database cascade", dropDB("other", true, false), "dropped [3 4]"},
		{"empty database", createDB("empty"), ""},
		{"drop empty database", dropDB("empty", false, false), ""},
		{"re-register, same incarnation", registerNode(2, "r2", RoleTablet), "nodes [2]"},
	}
	recorded := map[uint64]*pb.MetadataUpdate{}
	for _, st := range steps {
		res := h.apply(st.cmd)
		if st.name == "fence node 1" {
			// AdjustIsr is checked on a bucket it knows: the one table 2
			// has left.
			b := h.bucket(2, 0)
			if got := summary(h.feedAt(h.index)); got != st.want {
				t.Errorf("%s: feed %q, want %q", st.name, got, st.want)
			}
			recorded[h.index] = h.feedAt(h.index)
			h.ok(adjustIsr(b, b.GetLeader()))
			if got := summary(h.feedAt(h.index)); got != "buckets [2/0]" {
				t.Errorf("adjust isr: feed %q", got)
			}
			recorded[h.index] = h.feedAt(h.index)
			continue
		}
		u := h.feedAt(h.index)
		if got := summary(u); got != st.want {
			t.Errorf("%s (%v): feed %q, want %q", st.name, res, got, st.want)
		}
		if u == nil {
			continue
		}
		recorded[h.index] = u
		if u.GetIndex() != h.index || u.GetFull() {
			t.Errorf("%s: update index %d full %v", st.name, u.GetIndex(), u.GetFull())
		}
		// The records are the ones stored.
		for _, n := range u.GetNodes() {
			if stored, err := h.s.Node(n.GetId()); err != nil || !proto.Equal(stored, n) {
				t.Errorf("%s: node %v, stored %v", st.name, n, stored)
			}
		}
		for _, b := range u.GetBuckets() {
			if stored := h.bucket(b.GetTableId(), b.GetBucket()); !proto.Equal(stored, b) {
				t.Errorf("%s: bucket %v, stored %v", st.name, b, stored)
			}
		}
		for _, tb := range u.GetTables() {
			if stored, _, err := h.s.Table(tb.GetDatabase(), tb.GetName()); err != nil || !proto.Equal(stored, tb) {
				t.Errorf("%s: table %v, stored %v", st.name, tb, stored)
			}
		}
	}
	// Undecodable data and replays of applied entries record nothing.
	h.index++
	h.s.Apply(h.index, h.nowMs, []byte{0xff})
	h.applyAt(3, h.nowMs, registerNode(3, "", RoleTablet))
	if u := h.feedAt(h.index); u != nil {
		t.Errorf("undecodable: %v", u)
	}
	if h.s.AppliedIndex() != h.index {
		t.Errorf("applied index %d", h.s.AppliedIndex())
	}
	return recorded
}

func TestFeedRecordsChanges(t *testing.T) {
	h := newHarness(t)
	recorded := feedSteps(t, h)
	// Changes after every index lists the updates after it, in order.
	for after := uint64(0); after <= h.index+2; after++ {
		updates, ok := h.s.Changes(after)
		if !ok {
			t.Fatalf("Changes(%d) not ok", after)
		}
		var want []*pb.MetadataUpdate
		for i := after + 1; i <= h.index; i++ {
			if u := recorded[i]; u != nil {
				want = append(want, u)
			}
		}
		if !slices.EqualFunc(updates, want, func(a, b *pb.MetadataUpdate) bool { return proto.Equal(a, b) }) {
			t.Errorf("Changes(%d): %d updates, want %d", after, len(updates), len(want))
		}
	}
}

func TestChangesAreCopies(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("sales"))
	res := h.ok(createTable(ordersTable("sales", "a", nil)))
	before, _ := h.s.Changes(0)
	res.GetTable().Name = "changed by the caller"
	before[0].GetNodes()[0].Id = 99
	before[len(before)-1].GetBuckets()[0].Leader = 99
	after, _ := h.s.Changes(0)
	if after[0].GetNodes()[0].GetId() != 1 || after[len(after)-1].GetTables()[0].GetName() != "a" ||
		after[len(after)-1].GetBuckets()[0].GetLeader() == 99 {
		t.Errorf("the feed shares records with its callers: %v", after)
	}
}

func TestChangesAfterOpen(t *testing.T) {
	h := newHarness(t)
	// A new file: the feed starts at 0 and is complete.
	if u, ok := h.s.Changes(0); !ok || len(u) != 0 {
		t.Errorf("new state: %v, %v", u, ok)
	}
	h.tabletNodes(3)
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if u, ok := h.s.Changes(0); ok || u != nil {
		t.Errorf("closed state: %v, %v", u, ok)
	}
	s, err := Open(h.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h.s = s
	tests := []struct {
		after uint64
		ok    bool
	}{{0, false}, {2, false}, {3, true}, {4, true}}
	for _, tc := range tests {
		if u, ok := s.Changes(tc.after); ok != tc.ok || len(u) != 0 {
			t.Errorf("Changes(%d) = %v, %v", tc.after, u, ok)
		}
	}
	h.ok(registerNode(4, "", RoleTablet))
	if u, ok := s.Changes(3); !ok || summary(u[0]) != "nodes [4]" {
		t.Errorf("after reopen: %v, %v", u, ok)
	}
}

func TestFeedEviction(t *testing.T) {
	t.Run("by count", func(t *testing.T) {
		h := newHarness(t)
		h.s.feed.maxUpdates = 3
		h.tabletNodes(5) // updates at indexes 1..5
		h.ok(createDB("d"))
		tests := []struct {
			after uint64
			ok    bool
			want  []uint64
		}{
			{0, false, nil}, {1, false, nil}, {2, true, []uint64{3, 4, 5}},
			{4, true, []uint64{5}}, {5, true, nil}, {6, true, nil}, {100, true, nil},
		}
		for _, tc := range tests {
			u, ok := h.s.Changes(tc.after)
			var got []uint64
			for _, x := range u {
				got = append(got, x.GetIndex())
			}
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Errorf("Changes(%d) = %v, %v; want %v, %v", tc.after, got, ok, tc.want, tc.ok)
			}
		}
	})
	t.Run("by bytes", func(t *testing.T) {
		h := newHarness(t)
		h.tabletNodes(1)
		one, _ := h.s.Changes(0)
		size := proto.Size(one[0])
		h.s.feed.maxBytes = 2*size + size/2
		h.tabletNodes(4) // re-registers 1, then 2..4: same sizes
		if u, ok := h.s.Changes(2); ok || u != nil {
			t.Errorf("Changes(2) = %v, %v", u, ok)
		}
		if u, ok := h.s.Changes(3); !ok || len(u) != 2 {
			t.Errorf("Changes(3) = %d updates, %v", len(u), ok)
		}
		// An update larger than the bound is kept, alone.
		h.s.feed.maxBytes = 1
		h.ok(registerNode(5, "", RoleTablet))
		if u, ok := h.s.Changes(5); !ok || len(u) != 1 {
			t.Errorf("Changes(5) = %d updates, %v", len(u), ok)
		}
		if _, ok := h.s.Changes(4); ok {
			t.Errorf("Changes(4) ok")
		}
	})
}

func TestImage(t *testing.T) {
	h := newHarness(t)
	feedSteps(t, h)
	img, err := h.s.Image()
	if err != nil {
		t.Fatal(err)
	}
	if !img.GetFull() || img.GetIndex() != h.index || len(img.GetDroppedTables())+len(img.GetDroppedNodes()) != 0 {
		t.Errorf("image header %v", img)
	}
	// The image is what the reads return.
	var want strings.Builder
	var got strings.Builder
	for _, n := range h.s.Nodes() {
		fmt.Fprintln(&want, n)
	}
	for _, db := range h.s.Databases() {
		tables, _ := h.s.Tables(db.GetName())
		for _, tb := range tables {
			_, buckets, _ := h.s.Table(db.GetName(), tb.GetName())
			fmt.Fprintln(&want, tb)
			for _, b := range buckets {
				fmt.Fprintln(&want, b)
			}
		}
	}
	for _, n := range img.GetNodes() {
		fmt.Fprintln(&got, n)
	}
	for _, tb := range img.GetTables() {
		fmt.Fprintln(&got, tb)
		for _, b := range img.GetBuckets() {
			if b.GetTableId() == tb.GetId() {
				fmt.Fprintln(&got, b)
			}
		}
	}
	if got.String() != want.String() {
		t.Errorf("image:\n%s\nreads:\n%s", got.String(), want.String())
	}
	if len(img.GetNodes()) != 4 || len(img.GetTables()) != 1 || len(img.GetBuckets()) != 1 {
		t.Errorf("image counts: %v", img)
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Image(); err != ErrClosed {
		t.Errorf("Image after close: %v", err)
	}
}

// model is what a watcher holds: the records an Image and the updates
// after it add up to.
type model struct {
	index   uint64
	nodes   map[uint32]*pb.NodeRecord
	tables  map[uint64]*pb.TableRecord
	buckets map[[2]uint64]*pb.BucketRecord
}

func (m *model) apply(u *pb.MetadataUpdate) {
	if u.GetFull() {
		*m = model{nodes: map[uint32]*pb.NodeRecord{}, tables: map[uint64]*pb.TableRecord{}, buckets: map[[2]uint64]*pb.BucketRecord{}}
	}
	m.index = max(m.index, u.GetIndex())
	for _, n := range u.GetNodes() {
		m.nodes[n.GetId()] = n
	}
	for _, t := range u.GetTables() {
		m.tables[t.GetId()] = t
	}
	for _, b := range u.GetBuckets() {
		m.buckets[[2]uint64{b.GetTableId(), uint64(b.GetBucket())}] = b
	}
	for _, id := range u.GetDroppedTables() {
		delete(m.tables, id)
		for k := range m.buckets {
			if k[0] == id {
				delete(m.buckets, k)
			}
		}
	}
	for _, id := range u.GetDroppedNodes() {
		delete(m.nodes, id)
	}
}

// String renders the model in a canonical order.
func (m *model) String() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(m.nodes)) {
		fmt.Fprintln(&b, m.nodes[id])
	}
	for _, id := range slices.Sorted(maps.Keys(m.tables)) {
		fmt.Fprintln(&b, m.tables[id])
	}
	keys := slices.SortedFunc(maps.Keys(m.buckets), func(x, y [2]uint64) int {
		return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
	})
	for _, k := range keys {
		fmt.Fprintln(&b, m.buckets[k])
	}
	return b.String()
}

func imageModel(t *testing.T, s *State) *model {
	t.Helper()
	img, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	m := &model{}
	m.apply(img)
	return m
}

// TestWatcherFollowsTheState runs a watcher the way WatchMetadata does
// (Image; then WaitApplied and Changes, or a new Image when Changes is not
// ok) in rounds: after each batch of commands it holds what a fresh Image
// holds, whether the batch fit in the feed or not. Meanwhile another
// goroutine takes Images while commands apply; a replay of the log shows
// that each holds exactly the state at its index.
func TestWatcherFollowsTheState(t *testing.T) {
	h := newHarness(t)
	h.s.feed.maxUpdates = 6 // the watcher falls behind after some batches
	var log [][]byte        // the command of every index, from 1
	apply := func(cmd *pb.Command) {
		data := mustMarshal(t, cmd)
		log = append(log, data)
		h.index++
		h.nowMs += 1000
		h.s.Apply(h.index, h.nowMs, data)
	}
	for i := range uint32(4) {
		apply(registerNode(i+1, "", RoleTablet))
	}
	apply(createDB("db"))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		images  []*pb.MetadataUpdate // taken while commands apply
		watcher = &model{}
		resyncs int
		turn    = make(chan struct{})
		synced  = make(chan uint64)
	)
	wg.Go(func() { // takes an image whenever the applied index moves
		for {
			img, err := h.s.Image()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			images = append(images, img)
			mu.Unlock()
			if _, err := h.s.WaitApplied(ctx, img.GetIndex()); err != nil {
				return
			}
		}
	})
	wg.Go(func() { // the watcher, one step per turn
		img, err := h.s.Image()
		if err != nil {
			t.Error(err)
			return
		}
		watcher.apply(img)
		after := watcher.index
		synced <- after
		for {
			select {
			case <-turn:
			case <-ctx.Done():
				return
			}
			applied, err := h.s.WaitApplied(ctx, after)
			if err != nil {
				return
			}
			updates, ok := h.s.Changes(after)
			if !ok {
				resyncs++
				img, err := h.s.Image()
				if err != nil {
					t.Error(err)
					return
				}
				updates = []*pb.MetadataUpdate{img}
			}
			for _, u := range updates {
				watcher.apply(u)
			}
			// Changes may have listed updates past applied; commands that
			// changed nothing move applied past the last update.
			after = max(applied, watcher.index)
			synced <- after
		}
	})

	<-synced // the first image: every turn has a command after it
	i := 0
	for round, batch := range []int{1, 3, 9, 2, 14, 5, 1, 7, 20, 4} {
		for range batch {
			i++
			switch i % 6 {
			case 0:
				apply(createTable(ordersTable("db", fmt.Sprint("t", i), func(c *pb.CreateTable) { c.Buckets = int32(1 + i%3) })))
			case 1:
				apply(fenceNodes(uint32(1 + i%4)))
			case 2:
				apply(fenceNodes())
			case 3:
				if bs := h.buckets(); len(bs) > 0 {
					b := bs[i%len(bs)]
					apply(adjustIsr(b, b.GetReplicas()...))
				} else {
					apply(allocateWriterID())
				}
			case 4:
				apply(registerIncarnation(uint32(1+i%4), fmt.Sprint("inc", i)))
			case 5:
				apply(dropTable("db", fmt.Sprint("t", i-11), true))
			}
		}
		turn <- struct{}{}
		if got := <-synced; got != h.index {
			t.Fatalf("round %d: watcher at %d, applied %d", round, got, h.index)
		}
		if got, want := watcher.String(), imageModel(t, h.s).String(); got != want {
			t.Fatalf("round %d: watcher holds:\n%s\nwant:\n%s", round, got, want)
		}
	}
	cancel()
	wg.Wait()
	if resyncs == 0 {
		t.Errorf("the watcher never needed a new image")
	}
	t.Logf("%d commands, %d resyncs, %d images", h.index, resyncs, len(images))

	// Replay the log: every image holds the state at its index.
	r := newHarness(t)
	byIndex := map[uint64][]*pb.MetadataUpdate{}
	for _, img := range images {
		byIndex[img.GetIndex()] = append(byIndex[img.GetIndex()], img)
	}
	ms := startMs
	for i, data := range log {
		index := uint64(i + 1)
		ms += 1000
		r.s.Apply(index, ms, data)
		want := imageModel(t, r.s).String()
		for _, img := range byIndex[index] {
			m := &model{}
			m.apply(img)
			if got := m.String(); got != want {
				t.Fatalf("image at %d:\n%s\nreplayed:\n%s", index, got, want)
			}
		}
	}
}

func TestWaitApplied(t *testing.T) {
	// waiter starts WaitApplied(after) and returns its outcome.
	type outcome struct {
		index uint64
		err   error
	}
	waiter := func(ctx context.Context, s *State, after uint64) chan outcome {
		out := make(chan outcome, 1)
		go func() {
			index, err := s.WaitApplied(ctx, after)
			out <- outcome{index, err}
		}()
		return out
	}
	blocked := func(t *testing.T, out chan outcome) {
		t.Helper()
		synctest.Wait()
		select {
		case o := <-out:
			t.Fatalf("returned %v", o)
		default:
		}
	}
	tests := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"already applied", func(t *testing.T, h *harness) {
			if got, err := h.s.WaitApplied(t.Context(), h.index-1); got != h.index || err != nil {
				t.Errorf("got %d, %v", got, err)
			}
		}},
		{"wakes on apply", func(t *testing.T, h *harness) {
			out := waiter(t.Context(), h.s, h.index)
			blocked(t, out)
			h.ok(registerNode(7, "", RoleTablet))
			if o := <-out; o.index != h.index || o.err != nil {
				t.Errorf("got %v", o)
			}
		}},
		{"wakes on a command that changes nothing", func(t *testing.T, h *harness) {
			out := waiter(t.Context(), h.s, h.index)
			blocked(t, out)
			h.apply(createDB("bad name"))
			if o := <-out; o.index != h.index || o.err != nil {
				t.Errorf("got %v", o)
			}
		}},
		{"waits past the index it was given", func(t *testing.T, h *harness) {
			out := waiter(t.Context(), h.s, h.index+1)
			h.ok(createDB("x"))
			blocked(t, out)
			h.ok(createDB("y"))
			if o := <-out; o.index != h.index || o.err != nil {
				t.Errorf("got %v", o)
			}
		}},
		{"context canceled", func(t *testing.T, h *harness) {
			ctx, cancel := context.WithCancel(t.Context())
			out := waiter(ctx, h.s, h.index)
			blocked(t, out)
			cancel()
			if o := <-out; o.err != context.Canceled {
				t.Errorf("got %v", o)
			}
		}},
		{"context deadline", func(t *testing.T, h *harness) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if _, err := h.s.WaitApplied(ctx, h.index); err != context.DeadlineExceeded {
				t.Errorf("got %v", err)
			}
		}},
		{"closed", func(t *testing.T, h *harness) {
			out := waiter(t.Context(), h.s, h.index)
			blocked(t, out)
			h.s.Close()
			if o := <-out; o.err != ErrClosed {
				t.Errorf("got %v", o)
			}
			if _, err := h.s.WaitApplied(t.Context(), 0); err != ErrClosed {
				t.Errorf("after close: %v", err)
			}
		}},
		{"restore to a later index", func(t *testing.T, h *harness) {
			snap := snapshotAt(t, h.index+5)
			out := waiter(t.Context(), h.s, h.index)
			blocked(t, out)
			if err := h.s.Restore(bytes.NewReader(snap)); err != nil {
				t.Fatal(err)
			}
			if o := <-out; o.index != h.index+5 || o.err != nil {
				t.Errorf("got %v", o)
			}
		}},
		{"restore to an earlier index", func(t *testing.T, h *harness) {
			snap := snapshotAt(t, 1)
			out := waiter(t.Context(), h.s, h.index)
			blocked(t, out)
			if err := h.s.Restore(bytes.NewReader(snap)); err != nil {
				t.Fatal(err)
			}
			blocked(t, out)
			for i := uint64(2); i <= h.index+1; i++ {
				h.applyAt(i, h.nowMs, createDB(fmt.Sprint("r", i)))
			}
			if o := <-out; o.index != h.index+1 || o.err != nil {
				t.Errorf("got %v", o)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.tabletNodes(3)
				tc.run(t, h)
			})
		})
	}
}

// snapshotAt is a snapshot of a state that applied index commands.
func snapshotAt(t *testing.T, index uint64) []byte {
	t.Helper()
	h := newHarness(t)
	for range index {
		h.ok(allocateWriterID())
	}
	var buf bytes.Buffer
	if err := h.s.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRestoreResetsFeed(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3) // updates at 1..3
	var buf bytes.Buffer
	if err := h.s.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	h.ok(registerNode(4, "", RoleTablet))
	h.ok(registerNode(5, "", RoleTablet))
	if err := h.s.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		after uint64
		ok    bool
	}{{0, false}, {2, false}, {3, true}, {4, true}, {5, true}}
	for _, tc := range tests {
		if u, ok := h.s.Changes(tc.after); ok != tc.ok || len(u) != 0 {
			t.Errorf("Changes(%d) = %v, %v", tc.after, u, ok)
		}
	}
	// Raft applies the entries after the snapshot again: the feed records
	// them.
	h.applyAt(4, h.nowMs, registerNode(6, "", RoleTablet))
	if u, ok := h.s.Changes(3); !ok || len(u) != 1 || summary(u[0]) != "nodes [6]" || u[0].GetIndex() != 4 {
		t.Errorf("after restore: %v, %v", u, ok)
	}
	// A refused snapshot leaves the feed alone.
	if err := h.s.Restore(bytes.NewReader([]byte("not a snapshot"))); err == nil {
		t.Fatal("bad snapshot restored")
	}
	if u, ok := h.s.Changes(3); !ok || len(u) != 1 {
		t.Errorf("after a refused restore: %v, %v", u, ok)
	}
}
