package transport

import (
	"context"

	"storj.io/drpc"
)

// AfterReply registers fn to run once the call ctx belongs to is over: its
// reply encoded into the connection's send buffer (or the call failed) and
// nothing of the reply referenced any more. A handler uses it to reuse the buffers its reply points into. It
// reports false, and never runs fn, when ctx is not a call served by a
// Server (a test calling the service directly): the buffers are then left
// to the garbage collector. Hooks run on the serving goroutine, in the
// order they were added.
func AfterReply(ctx context.Context, fn func()) bool {
	h, ok := ctx.Value(afterReplyKey{}).(*afterReplyHooks)
	if !ok {
		return false
	}
	h.fns = append(h.fns, fn)
	return true
}

type afterReplyKey struct{}

// afterReplyHooks collects a call's AfterReply functions. A unary handler
// runs on the serving goroutine, so no lock is needed; streaming handlers
// that register from other goroutines would need one, and do not.
type afterReplyHooks struct{ fns []func() }

func (h *afterReplyHooks) run() {
	for _, fn := range h.fns {
		fn()
	}
}

// hookedStream is a served stream whose context carries the call's hooks.
type hookedStream struct {
	drpc.Stream
	ctx context.Context
	// manualFlush: the stream flushes at its end, not after each message
	// (a unary call's: its reply and the end go in one write).
	manualFlush bool
	// limits are checked on every message received (fieldlimit.go).
	limits fieldLimits
	// conn holds the request budget of the stream's messages; nil outside
	// a Server (budgethold.go). streamID is the stream's DRPC id, 0 when
	// unknown, and received counts the messages decoded.
	conn     *limitedConn
	streamID uint64
	received uint64
	// authorize checks each request message once decoded (security.go);
	// nil: no check.
	authorize func(context.Context, drpc.Message) error
}

func (s *hookedStream) Context() context.Context { return s.ctx }
