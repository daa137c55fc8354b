package meta

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// TestAdjustIsrRetryIsTheSameProposal: a bucket leader that retries an
// AdjustIsr whose outcome it did not learn sends the same request id, and
// gets the first result, not FENCED by the bucket epoch its first attempt
// raised (issue 11, bug 5).
func TestAdjustIsrRetryIsTheSameProposal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	r := startMeta(t, ctx)
	n := r.node.Load()
	propose := proposer(t, ctx, n)
	for id := uint32(2); id <= 3; id++ {
		propose(&pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{
			Id: id, Roles: []string{metastate.RoleTablet}, RpcAddress: "127.0.0.1:1", Incarnation: "test"}}}})
	}
	propose(&pb.Command{Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: "db"}}})
	table := propose(&pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "t",
		Columns: []*pb.Column{{Name: "id", Type: "BIGINT"}}, Buckets: 1, Replication: 2}}}).GetTable()
	b, err := n.State().Bucket(table.GetId(), 0)
	if err != nil {
		t.Fatal(err)
	}

	m := &metaService{r: r}
	req := &pb.AdjustIsrRequest{RequestId: []byte("shrink-1"), Change: &pb.AdjustIsr{
		TableId: b.TableId, Bucket: b.Bucket, LeaderId: b.Leader, LeaderEpoch: b.LeaderEpoch,
		BucketEpoch: b.BucketEpoch, Isr: []uint32{b.Leader}}}
	first, err := m.AdjustIsr(ctx, req)
	if err != nil || first.GetBucket().GetBucketEpoch() != b.BucketEpoch+1 {
		t.Fatalf("first attempt: %v %v", first, err)
	}
	again, err := m.AdjustIsr(ctx, req)
	if err != nil || !proto.Equal(again, first) {
		t.Fatalf("retry: %v %v, want %v", again, err, first)
	}
}
