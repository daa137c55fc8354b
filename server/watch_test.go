package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

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

// TestImageParts: an image split for a message bound comes back whole from
// its parts, every part within the bound unless one record is larger; a
// change among the parts breaks the stream.
func TestImageParts(t *testing.T) {
	img := &pb.MetadataUpdate{Index: 42, Full: true}
	for id := uint32(1); id <= 5; id++ {
		img.Nodes = append(img.Nodes, &pb.NodeRecord{Id: id, RpcAddress: fmt.Sprintf("10.0.0.%d:7000", id)})
	}
	for id := uint64(1); id <= 20; id++ {
		img.Tables = append(img.Tables, &pb.TableRecord{Id: id, Name: fmt.Sprint("t", id)})
		for b := range int32(30) {
			img.Buckets = append(img.Buckets, &pb.BucketRecord{TableId: id, Bucket: b, Replicas: []uint32{1, 2, 3}, Leader: 1, Isr: []uint32{1, 2}})
		}
	}
	for _, maxBytes := range []int{1, 100, 1000, proto.Size(img) - 1, proto.Size(img), 1 << 20} {
		parts := imageParts(img, maxBytes)
		var a imageAssembly
		var whole *pb.MetadataUpdate
		for i, p := range parts {
			if !p.GetFull() || p.GetIndex() != img.GetIndex() || p.GetMore() != (i < len(parts)-1) {
				t.Fatalf("max %d: part %d of %d: full %v, index %d, more %v", maxBytes, i, len(parts), p.GetFull(), p.GetIndex(), p.GetMore())
			}
			records := len(p.GetNodes()) + len(p.GetTables()) + len(p.GetBuckets())
			if size := proto.Size(p); size > maxBytes+8 && records > 1 { // 8: index, full and more
				t.Fatalf("max %d: part %d is %d bytes of %d records", maxBytes, i, size, records)
			}
			got, err := a.add(proto.CloneOf(p))
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != (i == len(parts)-1) {
				t.Fatalf("max %d: part %d of %d gave %v", maxBytes, i, len(parts), got)
			}
			whole = got
		}
		if !proto.Equal(whole, img) {
			t.Fatalf("max %d: %d parts make %v", maxBytes, len(parts), whole)
		}
		if maxBytes >= proto.Size(img) && len(parts) != 1 {
			t.Fatalf("max %d: %d parts of an image of %d bytes", maxBytes, len(parts), proto.Size(img))
		}
	}
	var a imageAssembly
	parts := imageParts(img, 1000)
	if _, err := a.add(parts[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := a.add(&pb.MetadataUpdate{Index: 43}); err == nil {
		t.Fatal("a change among an image's parts was taken")
	}
}

// TestWatchForNode: a watcher that names its node gets, of the buckets,
// only those the node holds a replica of, in the image and in the changes;
// every node and table it gets all the same.
func TestWatchForNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, _ := startMetaNode(t, ctx)
	n := s.node.Load()
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
