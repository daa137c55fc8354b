package transport_test

import (
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestAfterReplyRunsOnceTheReplyIsSent: a handler's hook spoils the reply
// object; callers still get it whole, and the hook runs for every call.
func TestAfterReplyRunsOnceTheReplyIsSent(t *testing.T) {
	n := startNode(t, nodeOptions{})
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	client := pb.NewDRPCMetaClient(pool.Conn(n.addr))
	for i := range uint32(20) {
		resp, err := client.Hello(t.Context(), &pb.HelloRequest{NodeId: i + 1, Roles: []string{"tablet"}, RpcAddress: "after-reply"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.NodeId != i+1 || len(resp.Roles) != 1 {
			t.Fatalf("call %d: reply %v: the hook ran before it was sent", i, resp)
		}
		select {
		case <-n.meta.hooked:
		case <-time.After(guard):
			t.Fatalf("call %d: the hook never ran", i)
		}
	}
	if transport.AfterReply(t.Context(), func() { t.Error("hook of no call ran") }) {
		t.Fatal("AfterReply accepted a context that is no served call")
	}
}
