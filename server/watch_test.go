package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestWatchSendsKeepalivesWhenIdle: a metadata stream with nothing new to
// say still carries a keepalive at the index served so far, so a watcher
// can tell a quiet meta node from a paused one.
func TestWatchSendsKeepalivesWhenIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, _ := startMetaNode(t, ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	stream, err := pb.NewDRPCMetaClient(pool.Conn(s.Addr())).WatchMetadata(ctx, &pb.WatchMetadataRequest{NodeId: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	img, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if !img.GetFull() || img.GetKeepalive() {
		t.Fatalf("first message %v is not an image", img)
	}
	for range 2 {
		u, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if !u.GetKeepalive() || u.GetIndex() != img.GetIndex() || u.GetFull() || len(u.GetBuckets())+len(u.GetNodes())+len(u.GetTables()) > 0 {
			t.Fatalf("idle stream sent %v, want a bare keepalive at index %d", u, img.GetIndex())
		}
	}
}

// TestWatchForNode: a watcher that names its node gets, of the buckets,
// only those the node holds a replica of, in the image and in the changes;
// every node and table it gets all the same.
func TestWatchForNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, _ := startMetaNode(t, ctx)
	n := s.meta.Node()
	propose := func(op *pb.Command) {
		t.Helper()
		op.RequestId = []byte(newID())
		if res, err := n.Propose(ctx, op); err != nil || res.GetError() != "" {
			t.Fatalf("%v: %v %v", op, err, res)
		}
	}
	for id := uint32(2); id <= 4; id++ {
		propose(&pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{
			Id: id, Roles: []string{RoleTablet}, RpcAddress: "127.0.0.1:1", Incarnation: "test"}}}})
	}
	propose(&pb.Command{Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: "db"}}})
	createTable := func(name string) {
		propose(&pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: name,
			Columns: []*pb.Column{{Name: "id", Type: "BIGINT"}}, Buckets: 6, Replication: 1}}})
	}
	createTable("a")
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	stream, err := pb.NewDRPCMetaClient(pool.Conn(s.Addr())).WatchMetadata(ctx, &pb.WatchMetadataRequest{NodeId: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	onlyNode3 := func(u *pb.MetadataUpdate, buckets int) {
		t.Helper()
		for _, b := range u.GetBuckets() {
			if !slices.Contains(b.GetReplicas(), 3) {
				t.Fatalf("update %d carries bucket %d/%d of replicas %v", u.GetIndex(), b.GetTableId(), b.GetBucket(), b.GetReplicas())
			}
		}
		if len(u.GetBuckets()) != buckets {
			t.Fatalf("update %d carries %d buckets, want %d (6 over 3 nodes)", u.GetIndex(), len(u.GetBuckets()), buckets)
		}
	}
	img, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if !img.GetFull() || len(img.GetNodes()) != 4 || len(img.GetTables()) != 1 {
		t.Fatalf("image %v: want every node and table", img)
	}
	onlyNode3(img, 2)
	createTable("b")
	for {
		u, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if u.GetKeepalive() {
			continue
		}
		if len(u.GetTables()) != 1 || u.GetTables()[0].GetName() != "b" {
			t.Fatalf("change %v, want table b", u)
		}
		onlyNode3(u, 2)
		return
	}
}
