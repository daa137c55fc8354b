package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Client is a connection to a Floe cluster. It is safe for concurrent use.
type Client struct {
	addrs []string
	pool  *transport.Pool
}

// retryBackoff paces retries of retriable errors.
const (
	retryBackoffMin = 20 * time.Millisecond
	retryBackoffMax = 500 * time.Millisecond
)

// Connect returns a client for the cluster reachable at any of addrs (RPC
// addresses of its nodes). It checks that one of them answers.
func Connect(ctx context.Context, addrs ...string) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("client: no server address")
	}
	c := &Client{addrs: addrs, pool: transport.NewPool(transport.PoolConfig{})}
	err := c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.RaftStatus(ctx, &pb.RaftStatusRequest{})
		return err
	})
	if err != nil {
		c.pool.Close()
		return nil, fmt.Errorf("client: no server answered at %v: %w", addrs, err)
	}
	return c, nil
}

// Close releases the client's connections.
func (c *Client) Close() error { return c.pool.Close() }

// Admin returns the administration API.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

// call runs fn against the servers in turn, moving on and retrying while
// errors are retriable, until one answers or ctx ends.
func (c *Client) call(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error {
	backoff := retryBackoffMin
	for attempt := 0; ; attempt++ {
		addr := c.addrs[attempt%len(c.addrs)]
		err := fn(ctx, pb.NewDRPCMetaClient(c.pool.Conn(addr)))
		if err == nil || !transport.IsRetriable(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if (attempt+1)%len(c.addrs) == 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
			backoff = min(2*backoff, retryBackoffMax)
		}
	}
}

// newRequestID returns a fresh request id for one logical write.
func newRequestID() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}
