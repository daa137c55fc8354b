package transport

import (
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// MaxMessageBytes bounds one request, MaxConns the connections; together
// they still let 8 clients each send a 15 MiB message at once, and DRPC
// buffers a packet whole before any handler sees it (then the decoder
// copies its strings and bytes again), so those 8 messages cost the node
// several hundred MiB. The request budget bounds what all connections
// together may have in reception, node-wide:
//
//   - A packet that stays within smallPacketBytes never touches it: normal
//     traffic (small produces, lookups, fetch requests) is unaffected.
//   - Past that, limitedConn reserves the packet's bytes, in steps of
//     budgetStepBytes, before it passes them on to DRPC: the frame header
//     already says how long the frame is.
//   - A reservation is granted only when the rest of the budget leaves
//     room for the packet to grow to MaxMessageBytes. So the packet
//     holding the most can always finish, and packets that all hold part
//     of the budget cannot wait on one another forever.
//   - A packet that cannot be granted waits, until its message deadline
//     (MessageTimeout from when it started waiting); then it is refused
//     with UNAVAILABLE, which is retriable and names the limit and
//     --max-inflight-request-bytes, and the rest of its stream is dropped.
//   - The reservation is held while its message is decoded and handled:
//     a unary call's until its handler returns, a stream message's until
//     the handler has received it (a stream lives on, and its handler's
//     later work is bounded by the handler's own limits), and every one
//     until its connection closes.

// DefaultMaxInflightRequestBytes is the request budget of a zero
// ServerConfig. A budgeted byte costs the node several: DRPC grows a
// packet's buffer frame by frame (the garbage of each growth included),
// decoding copies strings and bytes, and the garbage collector lets the
// heap grow to twice what is live. Two largest messages at once.
const DefaultMaxInflightRequestBytes = 32 << 20

// maxInflightFlag is the floe serve flag that sets
// ServerConfig.MaxInflightRequestBytes, named in refusals and logs.
const maxInflightFlag = "--max-inflight-request-bytes"

const (
	// smallPacketBytes is the largest packet that needs no budget.
	smallPacketBytes = 64 << 10
	// budgetStepBytes is how much more a growing packet reserves at once,
	// so that a 16 MiB message takes 16 reservations, not one per frame.
	budgetStepBytes = 1 << 20
)

// errBudgetClosed is why a reservation stopped waiting: its connection
// closed.
var errBudgetClosed = pkgerr.New("transport", "connection closed while waiting for request budget")

// errBudgetTimeout is why a reservation stopped waiting: the message's
// deadline passed.
var errBudgetTimeout = pkgerr.New("transport", "request budget not granted within the message timeout")

// requestBudget is the bytes of large requests a Server may have in
// reception and in handling at once.
type requestBudget struct {
	capacityBytes   int64
	maxMessageBytes int64 // what one packet may grow to

	mu        sync.Mutex
	usedBytes int64
	changed   chan struct{} // closed and replaced on every release
}

func newRequestBudget(capacityBytes, maxMessageBytes int) *requestBudget {
	return &requestBudget{
		capacityBytes:   int64(capacityBytes),
		maxMessageBytes: int64(min(maxMessageBytes, capacityBytes)),
		changed:         make(chan struct{}),
	}
}

// grow reserves n more bytes for a packet that holds heldBytes already,
// waiting until deadline or until closed is closed.
func (b *requestBudget) grow(heldBytes, n int64, deadline time.Time, closed <-chan struct{}) error {
	var timer *time.Timer
	for {
		b.mu.Lock()
		// Room for this packet to reach the largest message size: the
		// packet holding the most always has it, so some packet can
		// always finish.
		if b.capacityBytes-b.usedBytes >= b.maxMessageBytes-heldBytes && b.usedBytes+n <= b.capacityBytes {
			b.usedBytes += n
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		if timer == nil {
			wait := time.Until(deadline)
			if wait <= 0 {
				return errBudgetTimeout
			}
			timer = time.NewTimer(wait)
		}
		select {
		case <-changed:
		case <-timer.C:
			return errBudgetTimeout
		case <-closed:
			timer.Stop()
			return errBudgetClosed
		}
	}
}

// release gives back n bytes and wakes the waiters.
func (b *requestBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.usedBytes -= n
	if b.usedBytes < 0 {
		b.mu.Unlock()
		panic("transport: request budget released more than was reserved")
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// used returns the bytes reserved now.
func (b *requestBudget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.usedBytes
}
