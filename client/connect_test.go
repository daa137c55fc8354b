package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/fakepeer"
	"github.com/floedb/floe/transport"
)

// TestConnectGivesUpWhenNothingListens: addresses where nothing accepts a
// connection fail Connect on their own, about a second per address, with
// the dial error, well before the caller's deadline; a cluster that is
// merely electing a leader keeps being retried (other tests).
func TestConnectGivesUpWhenNothingListens(t *testing.T) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close() // nothing listens there now
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := Connect(ctx, addrs...)
	var dial *transport.DialError
	if !errors.As(err, &dial) || ctx.Err() != nil {
		t.Fatalf("Connect to %v = %v (context: %v), want the dial error before the deadline", addrs, err, ctx.Err())
	}
}

// TestConnectToForeignServiceFails: an address that accepts connections
// but is not a Floe node (an HTTP server, which waits for a request line
// DRPC never sends; a server that answers garbage; a listener that never
// answers) fails Connect in about a second with ErrNotFloe naming the
// address, instead of after the caller's whole timeout with "context
// deadline exceeded".
func TestConnectToForeignServiceFails(t *testing.T) {
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(httpSrv.Close)
	for _, tc := range []struct {
		name, addr string
	}{
		{"http server", httpSrv.Listener.Addr().String()},
		{"garbage", fakepeer.Start(t, fakepeer.Answer("+OK ready\r\n", false))},
		{"silent", fakepeer.Start(t, fakepeer.Silent)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := Connect(ctx, tc.addr)
			if !errors.Is(err, transport.ErrNotFloe) || !strings.Contains(err.Error(), tc.addr+" is not a Floe node") || ctx.Err() != nil {
				t.Fatalf("Connect to %s = %v (context: %v), want ErrNotFloe naming it before the deadline", tc.addr, err, ctx.Err())
			}
			t.Log(err)
		})
	}
}
