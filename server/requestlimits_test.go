package server

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmigrate"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Hostile Hellos and catalog requests, against a running node: a Hello
// over the peer limit is refused before it is decoded, Hellos naming
// thousands of peers leave later answers receivable by a plain DRPC client
// (its 4 MiB default), and an invalid database name never reaches the Raft
// log.
func TestHostileRequestsLeaveTheNodeServing(t *testing.T) {
	ctx := t.Context()
	s, _ := startMetaNode(t, ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { pool.Close() })
	meta := pb.NewDRPCMetaClient(pool.Conn(s.advertise))

	peers := func(from, n int) []*pb.PeerInfo {
		out := make([]*pb.PeerInfo, n)
		for i := range out {
			out[i] = &pb.PeerInfo{NodeId: uint32(100 + from + i), RpcAddress: fmt.Sprintf("10.0.%d.%d:7700", (from+i)/250, (from+i)%250),
				Roles: []string{RoleMeta}}
		}
		return out
	}
	_, err := meta.Hello(ctx, &pb.HelloRequest{NodeId: 50, RpcAddress: "10.9.9.9:7700", Peers: peers(0, maxHelloPeers+1)})
	if !errors.Is(err, transport.ErrTooLarge) || !strings.Contains(err.Error(), "HelloRequest.peers") {
		t.Fatalf("hello with %d peers: %v; want TOO_LARGE naming the field", maxHelloPeers+1, err)
	}
	for i := range 5 {
		if _, err := meta.Hello(ctx, &pb.HelloRequest{NodeId: 50, RpcAddress: "10.9.9.9:7700", Peers: peers(i*1000, 1000)}); err != nil {
			t.Fatalf("hello %d with 1000 peers: %v", i, err)
		}
	}
	// A plain DRPC client, with its default reader limit.
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", s.advertise)
	if err != nil {
		t.Fatal(err)
	}
	plain := drpcconn.New(drpcmigrate.NewHeaderConn(conn, drpcmigrate.DRPCHeader))
	defer plain.Close()
	resp, err := pb.NewDRPCMetaClient(plain).Hello(ctx, &pb.HelloRequest{NodeId: 51, RpcAddress: "10.9.9.8:7700"})
	if err != nil {
		t.Fatalf("a plain client's hello after the hostile ones: %v", err)
	}
	if len(resp.Peers) > maxHelloPeers+1 {
		t.Fatalf("hello answers %d peers; the table holds at most %d and the node itself", len(resp.Peers), maxHelloPeers)
	}

	before := s.meta.Node().Status().LastLogIndex
	_, err = meta.CreateDatabase(ctx, &pb.CreateDatabaseRequest{Name: strings.Repeat("n", 1<<20)})
	if !errors.Is(err, transport.ErrInvalidRequest) {
		t.Fatalf("create database with a 1 MiB name: %v; want INVALID_REQUEST", err)
	}
	if after := s.meta.Node().Status().LastLogIndex; after != before {
		t.Fatalf("the Raft log went from index %d to %d: the invalid command was proposed", before, after)
	}
}
