package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/fakepeer"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestPoolCallToForeignServiceFails: a call to an address where another
// service answers (an HTTP server refusing DRPC's first line, anything
// that answers bytes that are not DRPC) fails at once with a NotFloeError naming the address and quoting
// the answer, instead of waiting for a DRPC frame until its deadline.
func TestPoolCallToForeignServiceFails(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
	}{
		{"http refusal", fakepeer.Start(t, fakepeer.Answer("HTTP/1.0 400 Bad request\r\n\r\n", true))},
		{"greeting left open", fakepeer.Start(t, fakepeer.Answer("220 smtp.example ESMTP ready\r\n", false))},
		{"tls alert", fakepeer.Start(t, fakepeer.Answer("\x15\x03\x03\x00\x02\x02\x46", true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := transport.NewPool(transport.PoolConfig{})
			t.Cleanup(func() { pool.Close() })
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := pb.NewDRPCMetaClient(pool.Conn(tc.addr)).RaftStatus(ctx, &pb.RaftStatusRequest{})
			var nf *transport.NotFloeError
			if !errors.As(err, &nf) || !errors.Is(err, transport.ErrNotFloe) || nf.Addr != tc.addr || len(nf.Answer) == 0 {
				t.Fatalf("call to %s: %v, want a NotFloeError naming it", tc.addr, err)
			}
			if transport.IsRetriable(err) {
				t.Errorf("%v is retriable", err)
			}
			t.Log(err)
		})
	}
}
