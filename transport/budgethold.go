package transport

import (
	"context"
	"time"

	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport/pb"
)

// A connection's reservations of the request budget (requestbudget.go):
// the one of the packet in reception, made by the reader goroutine, and
// those of whole packets whose handling has not finished, released by the
// handler's goroutine or when the connection closes.

// budgetHold is the reservation of a whole packet.
type budgetHold struct {
	stream uint64
	// message is how many message packets of stream had arrived whole,
	// this one included; 0 for an invoke or metadata packet.
	message uint64
	bytes   int64
}

// connKey is the context key under which a served stream finds its
// connection.
type connKey struct{}

// budgetConn returns the connection a served stream's context belongs to,
// nil outside a Server.
func budgetConn(ctx context.Context) *limitedConn {
	c, _ := ctx.Value(connKey{}).(*limitedConn)
	return c
}

// reserve makes the reservation of the packet in reception cover sizeBytes,
// its size once the frame being read has passed. It returns the refusal
// the client is to get, or nil.
func (c *limitedConn) reserve(sizeBytes uint64) error {
	if c.budget == nil || sizeBytes <= smallPacketBytes {
		return nil
	}
	c.holdMu.Lock()
	held := c.growing
	c.holdMu.Unlock()
	if int64(sizeBytes) <= held {
		return nil
	}
	target := min((int64(sizeBytes)+budgetStepBytes-1)/budgetStepBytes*budgetStepBytes, c.budget.maxMessageBytes)
	target = max(target, int64(sizeBytes)) // a packet within MaxMessageBytes but above the budget's largest
	if held == 0 {
		c.budgetDeadline = time.Now().Add(c.budgetWait())
	}
	if err := c.budget.grow(held, target-held, c.budgetDeadline, c.closed); err != nil {
		return err
	}
	c.holdMu.Lock()
	if c.connClosed { // Close gave back what it found; this is late
		c.holdMu.Unlock()
		c.budget.release(target - held)
		return errBudgetClosed
	}
	c.growing = target
	c.holdMu.Unlock()
	return nil
}

// budgetWait is how long a packet may wait for the budget.
func (c *limitedConn) budgetWait() time.Duration {
	if c.messageTimeout > 0 {
		return c.messageTimeout
	}
	return DefaultMessageTimeout
}

// packetDone turns the reservation of the packet just passed whole into a
// hold of its stream.
func (c *limitedConn) packetDone(id drpcwire.ID, kind drpcwire.Kind) {
	if kind == drpcwire.KindMessage {
		if id.Stream != c.msgStream {
			c.msgStream, c.msgCount = id.Stream, 0
		}
		c.msgCount++
	}
	h := budgetHold{stream: id.Stream}
	if kind == drpcwire.KindMessage {
		h.message = c.msgCount
	}
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	c.holdLocked(h)
}

// keepRefused turns the reservation of a packet that is refused into a hold
// of its stream: the bytes it passed stay in DRPC's packet buffer until the
// stream's handler returns (it is cancelled) or the connection closes.
func (c *limitedConn) keepRefused(stream uint64) {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	c.holdLocked(budgetHold{stream: stream})
}

// holdLocked moves the reservation of the packet in reception into h and
// keeps it, or gives it back when the connection has closed already.
func (c *limitedConn) holdLocked(h budgetHold) {
	if c.growing == 0 {
		return
	}
	h.bytes, c.growing = c.growing, 0
	if c.connClosed {
		c.budget.release(h.bytes)
		return
	}
	c.holds = append(c.holds, h)
}

// releaseReceived gives back the holds of the first received message
// packets of stream: its handler has decoded them.
func (c *limitedConn) releaseReceived(stream, received uint64) {
	c.releaseWhere(func(h budgetHold) bool {
		return h.stream < stream || h.stream == stream && h.message <= received
	})
}

// releaseStream gives back the holds of stream and of every stream before
// it: its handler has returned.
func (c *limitedConn) releaseStream(stream uint64) {
	c.releaseWhere(func(h budgetHold) bool { return h.stream <= stream })
}

func (c *limitedConn) releaseWhere(done func(budgetHold) bool) {
	if c.budget == nil {
		return
	}
	var n int64
	c.holdMu.Lock()
	kept := c.holds[:0]
	for _, h := range c.holds {
		if done(h) {
			n += h.bytes
		} else {
			kept = append(kept, h)
		}
	}
	clear(c.holds[len(kept):])
	c.holds = kept
	c.holdMu.Unlock()
	c.budget.release(n)
}

// Close closes the connection, stops a wait for the budget and gives back
// everything the connection holds.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { close(c.closed) })
	if c.budget != nil {
		c.holdMu.Lock()
		c.connClosed = true
		n := c.growing
		for _, h := range c.holds {
			n += h.bytes
		}
		c.growing, c.holds = 0, nil
		c.holdMu.Unlock()
		c.budget.release(n)
	}
	return err
}

// budgetRefusal is the error a packet refused for want of budget is
// answered with.
func (c *limitedConn) budgetRefusal(sizeBytes uint64) error {
	return Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
		"the server has %d bytes of large requests in reception or handling, its limit (%s); a packet of at least %d bytes waited %v; try again",
		c.budget.capacityBytes, maxInflightFlag, sizeBytes, c.budgetWait())
}
