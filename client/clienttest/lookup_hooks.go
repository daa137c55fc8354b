package clienttest

import (
	"context"
	"sync"

	"github.com/floedb/floe/transport/pb"
)

// passLookupGate counts a lookup call and waits while a test holds them.
func (c *Cluster) passLookupGate(ctx context.Context) error {
	c.mu.Lock()
	c.lookups++
	gate := c.lookupGate
	c.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HoldLookup makes Lookup and PrefixLookup calls wait until release is
// called.
func (c *Cluster) HoldLookup() (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gate := make(chan struct{})
	c.lookupGate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.lookupGate == gate {
				c.lookupGate = nil
			}
			c.mu.Unlock()
			close(gate)
		})
	}
}

// Lookups is the number of Lookup and PrefixLookup calls received, held
// ones included.
func (c *Cluster) Lookups() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookups
}

// FailLookup makes the next Lookup or PrefixLookup of a bucket that
// reaches its leader fail with code. Faults queue up in call order.
func (c *Cluster) FailLookup(tableID uint64, bucket int32, code pb.ErrorCode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ref := bucketRef{tableID, bucket}
	c.lookupFault[ref] = append(c.lookupFault[ref], code)
}
