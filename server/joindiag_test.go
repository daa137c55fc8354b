package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/fakepeer"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

func TestDiagnoseHello(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	unavailable := transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "EOF")
	for _, tc := range []struct {
		name string
		o    helloOutcome
		want joinTrouble
		why  string
	}{
		{"answers, no cluster yet", helloOutcome{resp: &pb.HelloResponse{NodeId: 2, ClusterId: "c1"}}, joinOK, ""},
		{"answers, same cluster", helloOutcome{clusterID: "c1", resp: &pb.HelloResponse{NodeId: 2, ClusterId: "c1"}}, joinOK, ""},
		{"answers, peer not formed", helloOutcome{clusterID: "c1", resp: &pb.HelloResponse{NodeId: 2}}, joinOK, ""},
		{"answers from another cluster", helloOutcome{clusterID: "c1", resp: &pb.HelloResponse{NodeId: 2, ClusterId: "c2"}},
			joinOtherCluster, "node 2 belongs to cluster c2, this node to c1"},
		{"refused as another cluster", helloOutcome{clusterID: "c1",
			helloErr: transport.Errorf(pb.ErrorCode_ERROR_CODE_CLUSTER_MISMATCH, "cluster c2")}, joinOtherCluster, "another cluster"},
		{"connection refused", helloOutcome{helloErr: unavailable, dialErr: refused}, joinRefused, "nothing listens there"},
		{"dial timeout", helloOutcome{helloErr: context.DeadlineExceeded, dialErr: context.DeadlineExceeded}, joinTimeout, "no connection within"},
		{"dial net timeout", helloOutcome{helloErr: unavailable, dialErr: &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}}, joinTimeout, "no connection within"},
		{"no such host", helloOutcome{helloErr: unavailable, dialErr: &net.DNSError{Err: "no such host", Name: "nope.invalid"}}, joinUnreachable, "no such host"},
		{"accepts but no answer", helloOutcome{helloErr: context.DeadlineExceeded}, joinTimeout, "did not answer within"},
		{"accepts but speaks something else", helloOutcome{helloErr: unavailable}, joinNotFloe, "does not answer as a Floe node"},
		{"accepts, protocol error", helloOutcome{helloErr: transport.Errorf(pb.ErrorCode_ERROR_CODE_INTERNAL, "bad frame")}, joinNotFloe, "bad frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := diagnoseHello(tc.o)
			if got != tc.want || !strings.Contains(why, tc.why) || (tc.why == "" && why != "") {
				t.Fatalf("diagnoseHello = %v %q, want %v with %q", got, why, tc.want, tc.why)
			}
		})
	}
}

func TestJoinReporterPaces(t *testing.T) {
	var r joinReporter
	t0 := time.Unix(1000, 0)
	steps := []struct {
		addr          string
		trouble       joinTrouble
		at            time.Duration
		log, recovers bool
	}{
		{"a", joinRefused, 0, true, false},                              // first trouble: say so
		{"b", joinNotFloe, 0, true, false},                              // per address
		{"a", joinRefused, time.Second, false, false},                   // same trouble, too soon
		{"a", joinRefused, joinReportMin, true, false},                  // the interval passed
		{"a", joinRefused, joinReportMin + 3*time.Second, false, false}, // it doubled
		{"a", joinRefused, 3 * joinReportMin, true, false},
		{"a", joinTimeout, 3*joinReportMin + time.Millisecond, true, false}, // the trouble changed
		{"a", joinOK, 4 * joinReportMin, false, true},                       // answers again
		{"a", joinOK, 5 * joinReportMin, false, false},
		{"a", joinRefused, 5*joinReportMin + time.Millisecond, true, false}, // trouble again: at once
	}
	for i, s := range steps {
		log, recovered := r.report(s.addr, s.trouble, t0.Add(s.at))
		if log != s.log || recovered != s.recovers {
			t.Fatalf("step %d (%s %v at %v): log %v recovered %v, want %v %v", i, s.addr, s.trouble, s.at, log, recovered, s.log, s.recovers)
		}
	}
}

// recordedLog is a slog handler that keeps every record's message and
// attributes and signals each one.
type recordedLog struct {
	mu      sync.Mutex
	lines   []map[string]string
	changed chan struct{}
}

func (h *recordedLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordedLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordedLog) WithGroup(string) slog.Handler            { return h }
func (h *recordedLog) Handle(_ context.Context, r slog.Record) error {
	line := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		line[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
	return nil
}

// find returns the first record for which match holds, nil when none.
func (h *recordedLog) find(match func(map[string]string) bool) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if match(l) {
			return l
		}
	}
	return nil
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// TestJoinTroubleIsLoggedPerAddress: a meta node whose --join addresses
// are a closed port and a web server says, for each, why it cannot join
// through it.
func TestJoinTroubleIsLoggedPerAddress(t *testing.T) {
	refused, web := closedAddr(t), fakepeer.Start(t, fakepeer.Answer("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n", true))
	logs := &recordedLog{changed: make(chan struct{}, 1)}
	s, err := New(Config{NodeID: 1, Roles: []string{RoleMeta}, DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		Gossip: "127.0.0.1:0", Join: []string{refused, web}, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	runNode(t, s)
	want := map[string]string{refused: joinRefused.String(), web: joinNotFloe.String()}
	for addr, trouble := range want {
		for logs.find(func(l map[string]string) bool { return l["peer"] == addr && l["trouble"] == trouble }) == nil {
			select {
			case <-logs.changed:
			case <-t.Context().Done():
				t.Fatalf("no %q warning about %s", trouble, addr)
			}
		}
	}
	if l := logs.find(func(l map[string]string) bool { return l["peer"] == refused && l["trouble"] != joinRefused.String() }); l != nil {
		t.Fatalf("closed port diagnosed as %v", l)
	}
}
