package server

import (
	"context"
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
