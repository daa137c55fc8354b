package transport

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"storj.io/drpc"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcmetadata"

	"github.com/floedb/floe/transport/pb"
)

// MetadataClusterID is the DRPC metadata key under which a caller sends its
// cluster id. A node that knows its own cluster id refuses calls carrying
// another one with CLUSTER_MISMATCH.
const MetadataClusterID = "floe-cluster-id"

// handler wraps the Server's mux: it recovers panics, refuses calls from
// another cluster, and turns every error into its wire form.
//
// drpcserver sends the error HandleRPC returns to the caller as one error
// packet: its DRPC code (drpcerr.Code, found through Unwrap) and its whole
// Error() text. So whatever leaves here has passed through ToWire, which puts
// the pb.ErrorCode in the DRPC code and only the message in the text.
type handler struct {
	next      *Mux
	clusterID func() string
	limits    fieldLimits
	observer  RPCObserver // nil: none
	sec       Security
	log       *slog.Logger
}

// RPCObserver is told of every call a Server serves, as it ends (metrics).
// It is called on the call's goroutine: it must be quick and not block.
type RPCObserver interface {
	// ObserveRPC reports a call to rpc (as "/floe.v1.Tablet/Produce")
	// that ran for elapsed; failed says it ended with an error, whose
	// wire code is code.
	ObserveRPC(rpc string, elapsed time.Duration, failed bool, code pb.ErrorCode)
}

// HandleRPC serves one call.
func (h *handler) HandleRPC(stream drpc.Stream, rpc string) (err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("rpc handler panicked", "rpc", rpc, "panic", r, "stack", string(debug.Stack()))
			err = Errorf(pb.ErrorCode_ERROR_CODE_INTERNAL, "%s: handler panicked: %v", rpc, r)
		}
		err = ToWire(err)
		if h.observer != nil {
			h.observer.ObserveRPC(rpc, time.Since(start), err != nil, pb.ErrorCode(drpcerr.Code(err)))
		}
	}()
	if err := h.checkCluster(stream.Context()); err != nil {
		return err
	}
	caller, err := h.admit(stream.Context(), rpc)
	if err != nil {
		return err
	}
	manual := false
	if s, ok := stream.(interface{ SetManualFlush(bool) }); ok && h.next.unary[rpc] {
		// The reply waits in the stream's buffer for the end of the
		// stream, which flushes both in one write.
		s.SetManualFlush(true)
		manual = true
	}
	// The mux sends a unary reply before it returns, so hooks run after it.
	hooks := &afterReplyHooks{}
	defer hooks.run()
	hs := &hookedStream{Stream: stream, manualFlush: manual, limits: h.limits, conn: budgetConn(stream.Context())}
	if h.sec.Authorizer != nil && rpc != authRPC {
		hs.authorize = func(ctx context.Context, msg drpc.Message) error {
			return h.sec.Authorizer.AuthorizeRequest(ctx, caller, rpc, msg)
		}
	}
	if hs.conn != nil {
		if s, ok := stream.(interface{ ID() uint64 }); ok {
			hs.streamID = s.ID()
			// The request stays in memory until the handler returns.
			defer hs.conn.releaseStream(hs.streamID)
		}
	}
	hs.ctx = context.WithValue(stream.Context(), afterReplyKey{}, hooks)
	return h.next.HandleRPC(hs, rpc)
}

// admit checks the caller of a call that starts: it must have proven who it
// is when the server authenticates (Auth's own call aside), and may be
// refused by RPC alone (calls for nodes only).
func (h *handler) admit(ctx context.Context, rpc string) (Caller, error) {
	caller := CallerFrom(ctx)
	if rpc == authRPC {
		return caller, nil
	}
	if h.sec.Authenticate && caller.Principal.IsAnonymous() {
		if h.sec.OnAuthFailure != nil {
			h.sec.OnAuthFailure("unauthenticated_call")
		}
		return caller, errUnauthenticated
	}
	if h.sec.Authorizer != nil {
		if err := h.sec.Authorizer.AuthorizeCall(caller, rpc); err != nil {
			return caller, err
		}
	}
	return caller, nil
}

// checkCluster refuses a call whose caller names another cluster than this
// node's. Either side not knowing its cluster yet (cluster formation) lets the
// call through.
func (h *handler) checkCluster(ctx context.Context) error {
	md, _ := drpcmetadata.Get(ctx)
	theirs := md[MetadataClusterID]
	if theirs == "" || h.clusterID == nil {
		return nil
	}
	if ours := h.clusterID(); ours != "" && ours != theirs {
		return Errorf(pb.ErrorCode_ERROR_CODE_CLUSTER_MISMATCH,
			"caller belongs to cluster %q, this node to cluster %q", theirs, ours)
	}
	return nil
}
