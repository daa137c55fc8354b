package metastate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

const retentionMs = int64(RequestRetention / 1e6)

func TestReplayAtOrBelowAppliedIndex(t *testing.T) {
	h := newHarness(t)
	first := h.ok(withID("r1", createDB("a")))
	h.ok(createDB("b"))
	h.apply(withID("r3", createDB("bad-name")))
	before := fullDump(t, h.s)

	tests := []struct {
		name  string
		index uint64
		cmd   *pb.Command
		want  *pb.CommandResult // nil: INTERNAL already applied
	}{
		{"same entry with request id", 1, withID("r1", createDB("a")), first},
		{"request id of a refusal", 3, withID("r3", createDB("bad-name")), nil},
		{"other command at an applied index", 2, createDB("c"), nil},
		{"unknown request id", 3, withID("zz", createDB("c")), nil},
		{"index 0", 0, createDB("c"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.applyAt(tc.index, h.nowMs+5000, tc.cmd)
			switch {
			case tc.name == "request id of a refusal":
				wantRefused(t, res, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "bad-name")
				if res.GetIndex() != 3 {
					t.Errorf("index %d", res.GetIndex())
				}
			case tc.want != nil:
				if !proto.Equal(res, tc.want) {
					t.Errorf("result %v, want %v", res, tc.want)
				}
			default:
				wantRefused(t, res, pb.ErrorCode_ERROR_CODE_INTERNAL, "already applied")
			}
			if after := fullDump(t, h.s); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
	}
	if h.s.AppliedIndex() != 3 {
		t.Errorf("applied index %d", h.s.AppliedIndex())
	}
}

func TestRepeatedRequestID(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	tests := []struct {
		name   string
		cmd    func() *pb.Command
		refuse bool
	}{
		{"create database", func() *pb.Command { return createDB("a") }, false},
		{"create table", func() *pb.Command { return createTable(ordersTable("a", "t", nil)) }, false},
		{"refused create", func() *pb.Command { return createDB("bad-name") }, true},
		{"drop table", func() *pb.Command { return dropTable("a", "t", false) }, false},
		{"register node", func() *pb.Command { return registerNode(7, "", RoleTablet) }, false},
		{"allocate writer id", allocateWriterID, false},
		{"create table for the ISR", func() *pb.Command {
			return createTable(ordersTable("a", "i", func(c *pb.CreateTable) { c.Buckets = 1 }))
		}, false},
		{"adjust ISR", func() *pb.Command {
			// Built once: the retries carry the epochs the first one had.
			return adjustIsr(&pb.BucketRecord{TableId: 2, Replicas: []uint32{1, 2, 3}, Leader: 1}, 1)
		}, false},
		{"fence nodes", func() *pb.Command { return fenceNodes(1) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := "req-" + tc.name
			first := h.apply(withID(id, tc.cmd()))
			if (first.GetError() != "") != tc.refuse {
				t.Fatalf("first result %v", first)
			}
			before := rawDump(t, h.s)
			// Retried at later indexes, even a minute later, the first
			// result comes back and nothing changes.
			for range 3 {
				h.nowMs += 60_000
				again := h.apply(withID(id, tc.cmd()))
				if !proto.Equal(again, first) {
					t.Errorf("retry: %v, want %v", again, first)
				}
				if h.s.AppliedIndex() != h.index {
					t.Errorf("applied index %d, want %d", h.s.AppliedIndex(), h.index)
				}
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("a retry changed the state:\n%s\n%s", before, after)
			}
		})
	}
	// The request id, not the command, decides: another command under a
	// remembered id is answered with the first result too.
	first := h.ok(withID("x", createDB("x1")))
	if res := h.apply(withID("x", createDB("x2"))); !proto.Equal(res, first) {
		t.Errorf("got %v", res)
	}
	if _, err := h.s.Database("x2"); err == nil {
		t.Errorf("x2 created under a used request id")
	}
}

func TestRequestRetention(t *testing.T) {
	h := newHarness(t)
	first := h.ok(withID("r", createDB("a")))
	at := h.nowMs
	// Exactly RequestRetention later: still remembered.
	if res := h.applyAt(2, at+retentionMs, withID("r", createDB("a"))); !proto.Equal(res, first) {
		t.Fatalf("within retention: %v", res)
	}
	// One millisecond past: forgotten, so the command runs again (and is
	// refused, since the database exists).
	res := h.applyAt(3, at+retentionMs+1, withID("r", createDB("a")))
	wantRefused(t, res, pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, `"a"`)
	if res.GetIndex() != 3 {
		t.Errorf("index %d", res.GetIndex())
	}
	// The new result replaced the old one.
	again := h.applyAt(4, at+retentionMs+2, withID("r", createDB("zz")))
	if !proto.Equal(again, res) {
		t.Errorf("after replace: %v, want %v", again, res)
	}
	if n := requestCount(t, h.s); n != 1 {
		t.Errorf("%d remembered ids, want 1", n)
	}
}

func TestPruneRequests(t *testing.T) {
	t.Run("by age, bounded per apply", func(t *testing.T) {
		h := newHarness(t)
		const n = 3*pruneBatch + 10
		for i := range n {
			h.ok(withID(fmt.Sprint("id", i), registerNode(1, "", RoleTablet)))
		}
		if got := requestCount(t, h.s); got != n {
			t.Fatalf("%d remembered, want %d", got, n)
		}
		h.nowMs += retentionMs + int64(n)*1000
		want := n
		for want > 0 {
			h.ok(createDB(fmt.Sprint("d", h.index))) // no request id
			want = max(0, want-pruneBatch)
			if got := requestCount(t, h.s); got != want {
				t.Fatalf("%d remembered, want %d", got, want)
			}
		}
	})
	t.Run("only the expired ones", func(t *testing.T) {
		h := newHarness(t)
		h.ok(withID("old1", createDB("a"))) // at startMs+1000
		h.ok(withID("old2", createDB("b"))) // at startMs+2000
		h.applyAt(3, startMs+1000+retentionMs, withID("young", createDB("c")))
		if got := requestCount(t, h.s); got != 3 {
			t.Fatalf("%d remembered", got)
		}
		h.applyAt(4, startMs+1001+retentionMs, createDB("d")) // old1 is past retention
		if got := requestCount(t, h.s); got != 2 {
			t.Fatalf("%d remembered, want 2", got)
		}
		res := h.applyAt(5, startMs+2000+retentionMs, withID("old2", createDB("zz")))
		if res.GetIndex() != 2 {
			t.Errorf("old2 forgotten: %v", res)
		}
	})
	t.Run("cap evicts the oldest", func(t *testing.T) {
		h := newHarness(t)
		h.s.maxRequests = 10
		for i := range 15 {
			h.ok(withID(fmt.Sprint("id", i), createDB(fmt.Sprint("d", i))))
		}
		if got := requestCount(t, h.s); got != 10 {
			t.Fatalf("%d remembered, want 10", got)
		}
		// id0..id4 are gone: id4 runs again (and evicts id5); id6 is
		// remembered.
		wantRefused(t, h.apply(withID("id4", createDB("d4"))), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS)
		wantRefused(t, h.apply(withID("id5", createDB("d5"))), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS)
		if res := h.apply(withID("id7", createDB("d7"))); res.GetError() != "" || res.GetIndex() != 8 {
			t.Errorf("id7: %v", res)
		}
	})
	t.Run("clock going backwards", func(t *testing.T) {
		h := newHarness(t)
		h.ok(withID("a", createDB("a")))
		// A new leader whose clock is behind: nothing expires, ids stay.
		h.nowMs -= 10 * retentionMs
		h.ok(withID("b", createDB("b")))
		if got := requestCount(t, h.s); got != 2 {
			t.Fatalf("%d remembered", got)
		}
		// A zero append time (a Raft log without times) still orders.
		res := h.applyAt(h.index+1, -62135596800000, withID("c", createDB("c")))
		if res.GetError() != "" {
			t.Fatal(res)
		}
		if got := requestCount(t, h.s); got != 3 {
			t.Fatalf("%d remembered", got)
		}
	})
}

func TestUndecodableCommand(t *testing.T) {
	h := newHarness(t)
	h.ok(createDB("a"))
	before := rawDump(t, h.s)
	for i, data := range [][]byte{{0xff, 0xff, 0xff}, {0x0a, 0x05, 'a'}, bytes.Repeat([]byte{0x80}, 20)} {
		index := uint64(2 + i)
		res := h.s.Apply(index, h.nowMs, data)
		wantRefused(t, res, pb.ErrorCode_ERROR_CODE_INTERNAL, "undecodable")
		if res.GetIndex() != index || h.s.AppliedIndex() != index {
			t.Errorf("index %d, applied %d, want %d", res.GetIndex(), h.s.AppliedIndex(), index)
		}
	}
	if after := rawDump(t, h.s); after != before {
		t.Errorf("state changed")
	}
	h.index = h.s.AppliedIndex()
	h.ok(createDB("b"))
	// Empty data is an empty command.
	h.index++
	wantRefused(t, h.s.Apply(h.index, h.nowMs, nil), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "no known operation")
}

func TestRequestIDTooLong(t *testing.T) {
	h := newHarness(t)
	res := h.apply(withID(strings.Repeat("x", MaxRequestIDBytes+1), createDB("a")))
	wantRefused(t, res, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "request id")
	if _, err := h.s.Database("a"); err == nil || h.s.AppliedIndex() != 1 || requestCount(t, h.s) != 0 {
		t.Errorf("database %v, applied %d", err, h.s.AppliedIndex())
	}
	h.ok(withID(strings.Repeat("x", MaxRequestIDBytes), createDB("a")))
}

func TestApplyAfterClose(t *testing.T) {
	h := newHarness(t)
	h.ok(createDB("a"))
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, h.apply(createDB("b")), pb.ErrorCode_ERROR_CODE_INTERNAL, "closed")
	if h.s.AppliedIndex() != 0 || h.s.Databases() != nil || h.s.Close() != nil {
		t.Errorf("reads after close")
	}
	if _, err := h.s.Database("a"); err != ErrClosed {
		t.Errorf("Database after close: %v", err)
	}
}

// TestDeterministic applies one log to two states: the files hold the same
// bytes.
func TestDeterministic(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, b} {
		h.ok(initCluster("c"))
		for i := 1; i <= 5; i++ {
			h.ok(registerNode(uint32(i), fmt.Sprint("r", i%2), RoleTablet))
		}
		h.ok(withID("d", createDB("sales")))
		for i := range 5 {
			h.ok(withID(fmt.Sprint("t", i), createTable(ordersTable("sales", fmt.Sprint("t", i), func(c *pb.CreateTable) {
				c.Properties = map[string]string{"min.insync.replicas": "1", "merge-engine": "first_row", "changelog.image": "wal", "delete.behavior": "ignore"}
				c.Buckets = int32(i + 1)
			}))))
		}
		h.apply(withID("bad", createDB("-")))
		h.ok(dropTable("sales", "t2", false))
		h.ok(allocateWriterID())
		h.ok(fenceNodes(2, 4))
		h.ok(registerIncarnation(3, "wiped"))
		b := h.bucket(4, 0)
		h.ok(adjustIsr(b, b.GetLeader()))
		h.ok(drainNode(1, 1, 2, 5))
		h.ok(fenceNodes())
	}
	if fa, fb := fullDump(t, a.s), fullDump(t, b.s); fa != fb {
		t.Errorf("files differ:\n%s\n%s", fa, fb)
	}
}

func FuzzApply(f *testing.F) {
	for _, cmd := range []*pb.Command{
		initCluster("c"), registerNode(1, "r", RoleTablet), createDB("a"),
		createTable(ordersTable("a", "t", nil)), dropTable("a", "t", true), dropDB("a", true, false),
		allocateWriterID(), fenceNodes(1, 2), adjustIsr(&pb.BucketRecord{TableId: 1, Leader: 1}, 1),
		drainNode(1, 1), undrainNode(1),
	} {
		data, _ := proto.Marshal(withID("x", cmd))
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t)
		h.ok(registerNode(1, "", RoleTablet))
		h.ok(createDB("a"))
		for i := range 3 {
			index := h.index + 1 + uint64(i)
			res := h.s.Apply(index, h.nowMs, data)
			if res == nil || h.s.AppliedIndex() != index {
				t.Fatalf("index %d: result %v, applied %d", index, res, h.s.AppliedIndex())
			}
			if res.GetError() != "" && res.GetValue() != nil {
				t.Fatalf("refusal with a value: %v", res)
			}
		}
	})
}
