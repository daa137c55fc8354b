package meta

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// fakeTablet is a tablet node's RPC endpoint that answers ReplicaLogs with
// what the test sets, or, silent, never answers.
type fakeTablet struct {
	pb.DRPCTabletUnimplementedServer
	addr string

	mu     sync.Mutex
	logs   []*pb.ReplicaLog
	silent bool
	asked  []*pb.ReplicaLogsRequest
}

func (f *fakeTablet) ReplicaLogs(ctx context.Context, req *pb.ReplicaLogsRequest) (*pb.ReplicaLogsResponse, error) {
	f.mu.Lock()
	f.asked = append(f.asked, req)
	logs, silent := f.logs, f.silent
	f.mu.Unlock()
	if silent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &pb.ReplicaLogsResponse{Logs: logs}, nil
}

func (f *fakeTablet) set(silent bool, logs ...*pb.ReplicaLog) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.silent, f.logs = silent, logs
}

func (f *fakeTablet) requests() []*pb.ReplicaLogsRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// startFakeTablet serves a fakeTablet on a loopback port until the test
// ends.
func startFakeTablet(t *testing.T) *fakeTablet {
	t.Helper()
	lis, err := transport.Listen("127.0.0.1:0", transport.ListenerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTablet{addr: lis.Addr().String()}
	srv := transport.NewServer(transport.ServerConfig{})
	if err := pb.DRPCRegisterTablet(srv.Mux(), f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = lis.Run(ctx) })
	wg.Go(func() { _ = srv.Serve(ctx, lis.DRPC()) })
	t.Cleanup(func() {
		cancel()
		_ = lis.Close()
		wg.Wait()
	})
	return f
}

// TestUncleanElectionGathersReplicaLogs: before an unclean election the
// controller asks the live replicas' nodes what their logs hold and the
// replica with the longest log of the latest epoch leads; a node that does
// not answer in time is ranked after every node that did, though it comes
// first in assignment order. A clean election asks nobody.
func TestUncleanElectionGathersReplicaLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	r := startMeta(t, ctx)
	n := r.node.Load()
	propose := proposer(t, ctx, n)
	tablets := map[uint32]*fakeTablet{}
	for id := uint32(2); id <= 5; id++ {
		tablets[id] = startFakeTablet(t)
		propose(&pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{
			Id: id, Roles: []string{metastate.RoleTablet}, RpcAddress: tablets[id].addr, Incarnation: "test"}}}})
	}
	propose(&pb.Command{Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: "db"}}})
	table := propose(&pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "t",
		Columns: []*pb.Column{{Name: "id", Type: "BIGINT"}}, Buckets: 1, Replication: 4}}}).GetTable()
	b, err := n.State().Bucket(table.GetId(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// The leader, first in assignment order, shrinks the ISR to itself and
	// dies; of the live replicas, the first does not answer, the second
	// holds less of the latest epoch than the third.
	propose(&pb.Command{Op: &pb.Command_AdjustIsr{AdjustIsr: &pb.AdjustIsr{
		TableId: b.TableId, Bucket: b.Bucket, LeaderId: b.Leader, LeaderEpoch: b.LeaderEpoch,
		BucketEpoch: b.BucketEpoch, Isr: []uint32{b.Leader}}}})
	dead, silent, short, long := b.Replicas[0], b.Replicas[1], b.Replicas[2], b.Replicas[3]
	tablets[silent].set(true)
	tablets[short].set(false, &pb.ReplicaLog{NodeId: short, LatestEpoch: 7, EndOffset: 900})
	// A node speaks for its own replicas only, and for the buckets asked.
	tablets[long].set(false, &pb.ReplicaLog{NodeId: dead, LatestEpoch: 7, EndOffset: 1200},
		&pb.ReplicaLog{Bucket: 5, LatestEpoch: 9, EndOffset: 9000})
	live := []uint32{silent, short, long}

	clean := &pb.ElectLeadersRequest{Database: "db", Table: "t"}
	if _, err := r.electLeaders(ctx, clean, []byte(NewID()), live); err == nil {
		t.Fatal("a clean election without a live in-sync replica succeeded")
	}
	for id, f := range tablets {
		if r := f.requests(); len(r) != 0 {
			t.Fatalf("a clean election asked node %d: %v", id, r)
		}
	}

	resp, err := r.electLeaders(ctx, &pb.ElectLeadersRequest{Database: "db", Table: "t", Unclean: true}, []byte(NewID()), live)
	if err != nil {
		t.Fatal(err)
	}
	want := []*pb.ElectionCandidate{
		{NodeId: long, LogKnown: true, LatestEpoch: 7, EndOffset: 1200},
		{NodeId: short, LogKnown: true, LatestEpoch: 7, EndOffset: 900},
		{NodeId: silent},
	}
	e := resp.GetBuckets()
	if len(e) != 1 || !e[0].GetUnclean() || e[0].GetBucket().GetLeader() != long ||
		!slices.EqualFunc(e[0].GetCandidates(), want, func(x, y *pb.ElectionCandidate) bool { return proto.Equal(x, y) }) {
		t.Fatalf("election %v; want node %d to lead, ranked %v", resp, long, want)
	}
	if got, err := n.State().Bucket(table.GetId(), 0); err != nil || got.GetLeader() != long {
		t.Fatalf("bucket %v %v; want leader %d", got, err, long)
	}
	for _, id := range live {
		r := tablets[id].requests()
		if len(r) != 1 || r[0].GetTableId() != table.GetId() || !slices.Equal(r[0].GetBuckets(), []int32{0}) {
			t.Fatalf("node %d was asked %v; want once, for bucket 0", id, r)
		}
	}
	if r := tablets[dead].requests(); len(r) != 0 {
		t.Fatalf("the dead node was asked %v", r)
	}
}
