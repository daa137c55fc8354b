package client

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

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
