package transport_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmigrate"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// helloCall sends a Hello of about padBytes on a connection of its own and
// returns its error.
func helloCall(ctx context.Context, t *testing.T, addr, rpcAddress string, padBytes int) error {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	conn := drpcconn.New(drpcmigrate.NewHeaderConn(raw, drpcmigrate.DRPCHeader))
	defer conn.Close()
	_, err = pb.NewDRPCMetaClient(conn).Hello(ctx, &pb.HelloRequest{NodeId: 1, RpcAddress: rpcAddress, Roles: []string{strings.Repeat("r", padBytes)}})
	return err
}

// TestRequestBudget: large requests take the node-wide request budget
// until their handler returns. One more waits, then is refused with a
// retriable UNAVAILABLE naming the flag, without ever reaching a handler;
// small requests pass meanwhile, and the budget comes back when the
// handlers return. Without the budget the third large request reached its
// handler.
func TestRequestBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	n := startNode(t, nodeOptions{server: transport.ServerConfig{
		MaxMessageBytes: 1 << 20, MaxInflightRequestBytes: 2 << 20, MessageTimeout: 200 * time.Millisecond}})
	const large = 600 << 10

	held := make(chan error, 2)
	for range 2 {
		go func() { held <- helloCall(ctx, t, n.addr, "block", large) }()
		select {
		case <-n.meta.entered:
		case <-ctx.Done():
			t.Fatal("a large call within the budget never reached its handler")
		}
	}

	err := transport.FromWire(helloCall(ctx, t, n.addr, "block", large))
	var werr *transport.Error
	if !errors.As(err, &werr) || werr.Code != pb.ErrorCode_ERROR_CODE_UNAVAILABLE || !werr.Retriable() ||
		!strings.Contains(err.Error(), "--max-inflight-request-bytes") {
		t.Fatalf("a large call past the budget: %v, want a retriable UNAVAILABLE naming --max-inflight-request-bytes", err)
	}
	select {
	case <-n.meta.entered:
		t.Fatal("a large call past the budget reached its handler")
	default:
	}
	if err := helloCall(ctx, t, n.addr, "", 1<<10); err != nil {
		t.Fatalf("a small call while the budget is taken: %v", err)
	}

	close(n.meta.release)
	for range 2 {
		if err := <-held; err != nil {
			t.Fatalf("a held call: %v", err)
		}
	}
	if err := helloCall(ctx, t, n.addr, "", large); err != nil {
		t.Fatalf("a large call once the budget came back: %v", err)
	}
}

// TestRequestBudgetConfig: a budget below the largest message could never
// admit one, and is refused.
func TestRequestBudgetConfig(t *testing.T) {
	cfg := transport.ServerConfig{MaxMessageBytes: 4 << 20, MaxInflightRequestBytes: 1 << 20}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--max-inflight-request-bytes") {
		t.Fatalf("Validate: %v, want the budget refused, naming its flag", err)
	}
	for _, b := range []int{0, -1, 4 << 20} {
		cfg.MaxInflightRequestBytes = b
		if err := cfg.Validate(); err != nil {
			t.Fatalf("MaxInflightRequestBytes %d: %v", b, err)
		}
	}
}

// padEncoding is protobuf with padBytes of an unknown field appended to
// what it marshals: a large request any message type decodes.
type padEncoding struct{ padBytes int }

func (e padEncoding) Marshal(msg drpc.Message) ([]byte, error) {
	b, err := proto.Marshal(msg.(proto.Message))
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	return protowire.AppendBytes(b, make([]byte, e.padBytes)), err
}

func (e padEncoding) Unmarshal(b []byte, msg drpc.Message) error {
	return proto.Unmarshal(b, msg.(proto.Message))
}

// TestRequestBudgetStreamMessage: a stream message gives its budget back
// once its handler has received it, not when the stream ends: three
// streams that each sent a large request and stay open fit a budget of
// two. Held to the streams' end, the third was refused.
func TestRequestBudgetStreamMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	n := startNode(t, nodeOptions{server: transport.ServerConfig{
		MaxMessageBytes: 1 << 20, MaxInflightRequestBytes: 2 << 20, MessageTimeout: 200 * time.Millisecond}})
	n.meta.watchGate = make(chan struct{})
	enc := padEncoding{padBytes: 600 << 10}
	for i := range 3 {
		raw, err := net.Dial("tcp", n.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn := drpcconn.New(drpcmigrate.NewHeaderConn(raw, drpcmigrate.DRPCHeader))
		defer conn.Close()
		stream, err := conn.NewStream(ctx, "/floe.v1.Meta/WatchMetadata", enc)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.MsgSend(&pb.WatchMetadataRequest{NodeId: 1}, enc); err != nil {
			t.Fatal(err)
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var up pb.MetadataUpdate
		if err := stream.MsgRecv(&up, enc); err != nil || up.Index != 1 {
			t.Fatalf("stream %d: first update %v, %v", i, up.Index, transport.FromWire(err))
		}
	}
}
