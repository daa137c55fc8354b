package transport_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// A request whose limited field holds too many elements is refused with
// TOO_LARGE naming the field and its setting, before the handler runs, and
// the connection serves the next call.
func TestFieldLimitRefusesBeforeDecoding(t *testing.T) {
	a := startNode(t, nodeOptions{server: transport.ServerConfig{FieldLimits: []transport.FieldLimit{
		{Field: "floe.v1.HelloRequest.peers", Max: 3, Setting: "floe serve --test-peers"},
	}}})
	pool, _ := countingPool(t, transport.PoolConfig{})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))
	hello := func(peers int) error {
		req := &pb.HelloRequest{NodeId: 5, RpcAddress: "block-free"}
		for range peers {
			req.Peers = append(req.Peers, &pb.PeerInfo{})
		}
		_, err := client.Hello(t.Context(), req)
		return err
	}
	if err := hello(3); err != nil {
		t.Fatalf("hello with 3 peers, at the limit: %v", err)
	}
	err := hello(4)
	if !errors.Is(err, transport.ErrTooLarge) || !strings.Contains(err.Error(), "floe.v1.HelloRequest.peers") ||
		!strings.Contains(err.Error(), "floe serve --test-peers") {
		t.Fatalf("hello with 4 peers: %v; want TOO_LARGE naming the field and its setting", err)
	}
	if err := hello(0); err != nil {
		t.Fatalf("hello after a refusal: %v", err)
	}
}

func TestFieldLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit transport.FieldLimit
	}{
		{"unknown", transport.FieldLimit{Field: "floe.v1.HelloRequest.nope", Max: 1}},
		{"not repeated", transport.FieldLimit{Field: "floe.v1.HelloRequest.node_id", Max: 1}},
		{"packed", transport.FieldLimit{Field: "floe.v1.LookupResponse.row_sizes", Max: 1}},
		{"zero", transport.FieldLimit{Field: "floe.v1.HelloRequest.peers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := transport.NewServer(transport.ServerConfig{FieldLimits: []transport.FieldLimit{tc.limit}})
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := srv.Serve(ctx, nil); err == nil {
				t.Fatalf("a server with limit %+v serves", tc.limit)
			}
		})
	}
}
