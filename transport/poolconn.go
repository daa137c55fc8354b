package transport

import (
	"context"
	"errors"
	"io"
	"maps"

	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcenc"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcmetadata"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// poolConn is the drpc.Conn that Pool.Conn returns: every call borrows a
// connection of the pool for its duration.
type poolConn struct {
	pool *Pool
	addr string
}

var _ drpc.Conn = (*poolConn)(nil)

// Close does nothing: the pool owns the connections.
func (c *poolConn) Close() error { return nil }

// Closed returns a channel closed when the pool is.
func (c *poolConn) Closed() <-chan struct{} { return c.pool.done }

// Unblocked returns a closed channel: a call never waits for an earlier
// call's cancellation, since a canceled call's connection is not reused.
func (c *poolConn) Unblocked() <-chan struct{} { return c.pool.unblocked }

// Invoke makes a unary call on a pooled connection. A request over
// MaxMessageBytes is refused with TOO_LARGE before anything is sent.
func (c *poolConn) Invoke(ctx context.Context, rpc string, enc drpc.Encoding, in, out drpc.Message) error {
	p := c.pool
	bp := replyBufs.Get().(*[]byte)
	defer putBuf(bp)
	data, err := p.marshal(rpc, enc, in, bp)
	if err != nil {
		return err
	}
	ctx = p.outgoing(ctx)
	pc, err := p.get(ctx, c.addr)
	if err != nil {
		return p.getError(ctx, err)
	}
	err = invoke(ctx, pc.conn, rpc, enc, data, out)
	p.put(pc, reusable(ctx, pc, err))
	return callError(ctx, pc, err)
}

// NewStream starts a streaming call on a pooled connection, which returns to
// the pool once the stream is finished: the caller must Close the stream or
// receive until it ends.
func (c *poolConn) NewStream(ctx context.Context, rpc string, enc drpc.Encoding) (drpc.Stream, error) {
	p := c.pool
	ctx = p.outgoing(ctx)
	pc, err := p.get(ctx, c.addr)
	if err != nil {
		return nil, p.getError(ctx, err)
	}
	stream, err := pc.conn.NewStream(ctx, rpc, enc)
	if err != nil {
		p.put(pc, reusable(ctx, pc, err))
		return nil, callError(ctx, pc, err)
	}
	released := make(chan struct{})
	context.AfterFunc(stream.Context(), func() {
		p.put(pc, ctx.Err() == nil)
		close(released)
	})
	return &poolStream{
		Stream: stream,
		pool:   p,
		ctx:    ctx,
		pc:     pc,
		done:   &releasedCtx{Context: stream.Context(), released: released},
	}, nil
}

// rawStream is what drpcstream.Stream offers beyond drpc.Stream.
type rawStream interface {
	RawWrite(kind drpcwire.Kind, data []byte) error
	RawFlush() error
}

// invoke runs a unary call with an already marshaled request: invoke,
// message and close-send go out in one write, then the response is read.
func invoke(ctx context.Context, conn *drpcconn.Conn, rpc string, enc drpc.Encoding, data []byte, out drpc.Message) error {
	stream, err := conn.NewStream(ctx, rpc, enc)
	if err != nil {
		return err
	}
	defer func() { _ = stream.Close() }()
	raw, ok := stream.(rawStream)
	if !ok {
		return pkgerr.New("transport", "drpc stream does not support raw writes")
	}
	err = raw.RawWrite(drpcwire.KindMessage, data)
	if err == nil {
		err = stream.CloseSend()
	}
	// Writes fail with io.EOF once the server has ended the call (with an
	// error packet, say, before the request was all sent): the receive
	// returns why. drpcconn.Conn.Invoke would return the io.EOF.
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err = recv(stream, out, enc); err == io.EOF { // the bare sentinel only
		return errNoResponse
	}
	return err
}

// errNoResponse is a unary call the server ended without an answer.
var errNoResponse = pkgerr.New("transport", "the server ended the call without a response")

// recv is stream.MsgRecv, working around drpcstream: the first receive
// flushes what is left of the request, and once the server has ended the
// stream that flush fails with io.EOF, hiding the server's error. The next
// receive returns it (or io.EOF again when the stream simply ended). Neither
// blocks once the stream has ended.
func recv(stream drpc.Stream, msg drpc.Message, enc drpc.Encoding) error {
	err := stream.MsgRecv(msg, enc)
	if err == io.EOF { // the bare sentinel only
		err = stream.MsgRecv(msg, enc)
	}
	return err
}

// poolStream is a stream on a pooled connection; its errors have passed
// through FromWire.
type poolStream struct {
	drpc.Stream
	pool *Pool
	ctx  context.Context // the call's
	pc   *pooledConn
	done *releasedCtx
}

// Context returns the stream's context. It is done once the stream is
// finished and its connection back in the pool, so a caller that waits for
// it can count on the next call reusing the connection.
func (s *poolStream) Context() context.Context { return s.done }

// MsgSend sends a message, refusing one over MaxMessageBytes with TOO_LARGE
// before anything is sent.
func (s *poolStream) MsgSend(msg drpc.Message, enc drpc.Encoding) error {
	raw, ok := s.Stream.(rawStream)
	if !ok {
		return s.wrap(s.Stream.MsgSend(msg, enc))
	}
	bp := replyBufs.Get().(*[]byte)
	defer putBuf(bp)
	data, err := s.pool.marshal("stream message", enc, msg, bp)
	if err != nil {
		return err
	}
	err = raw.RawWrite(drpcwire.KindMessage, data)
	if err == nil {
		err = raw.RawFlush()
	}
	return s.wrap(err)
}

// MsgRecv receives a message; io.EOF is the end of the stream.
func (s *poolStream) MsgRecv(msg drpc.Message, enc drpc.Encoding) error {
	return s.wrap(recv(s.Stream, msg, enc))
}

// CloseSend tells the server no more messages come.
func (s *poolStream) CloseSend() error { return s.wrap(s.Stream.CloseSend()) }

// Close ends the stream.
func (s *poolStream) Close() error { return s.wrap(s.Stream.Close()) }

// wrap converts a stream error. A bare io.EOF stays: DRPC reports with it
// the normal end of a stream, and a lost connection as context.Canceled.
func (s *poolStream) wrap(err error) error {
	if err == nil || err == io.EOF { // only the bare sentinel means "stream ended"
		return err
	}
	return callError(s.ctx, s.pc, err)
}

// marshal encodes a request into *buf, which keeps the grown buffer, and
// checks it against MaxMessageBytes. The stream's writer copies what it is
// given before RawWrite returns, so the caller gives *buf back to the pool
// once the write is done.
func (p *Pool) marshal(what string, enc drpc.Encoding, msg drpc.Message, buf *[]byte) ([]byte, error) {
	data, err := drpcenc.MarshalAppend(msg, enc, (*buf)[:0])
	*buf = data[:0]
	if err != nil {
		return nil, Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%s: cannot encode: %v", what, err)
	}
	if len(data) > p.cfg.MaxMessageBytes {
		return nil, Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "%s: %d bytes, over the %d-byte limit",
			what, len(data), p.cfg.MaxMessageBytes)
	}
	return data, nil
}

// getError converts a failure to get a connection.
func (p *Pool) getError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrPoolClosed), errors.Is(err, p.invalid):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case refusedHandshake(err):
		return err
	default: // the dial failed
		return &DialError{Err: err}
	}
}

// refusedHandshake reports a connection that was made but refused: a TLS
// handshake or a sign-in that failed for a reason retrying does not
// change (UNAUTHENTICATED). It is the node's answer, not a failure to
// reach it.
func refusedHandshake(err error) bool {
	var we *Error
	return errors.As(err, &we) && we.Code == pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED
}

// DialError is a failure to connect: nothing accepted the connection, or
// the address does not resolve. It matches UNAVAILABLE (retriable), and
// unwraps to the dial's own error too.
type DialError struct {
	Err error
}

func (e *DialError) Error() string {
	return CodeName(pb.ErrorCode_ERROR_CODE_UNAVAILABLE) + ": " + e.Err.Error()
}

// Unwrap gives the wire error, for errors.As(err, **Error) and IsRetriable,
// and the dial's error.
func (e *DialError) Unwrap() []error {
	return []error{&Error{Code: pb.ErrorCode_ERROR_CODE_UNAVAILABLE, Message: e.Err.Error()}, e.Err}
}

// callError converts the error of a call on pc.
func callError(ctx context.Context, pc *pooledConn, err error) error {
	if err == nil {
		return nil
	}
	if answer := pc.sniff.foreignAnswer(); answer != nil {
		return &NotFloeError{Addr: pc.addr, Answer: answer}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		// DRPC ends the calls of a connection that closes with
		// context.Canceled, though the caller canceled nothing.
		return &Error{Code: pb.ErrorCode_ERROR_CODE_UNAVAILABLE, Message: "connection lost during the call: " + err.Error()}
	}
	noteRefusal(pc, err)
	return fromWire(err, isClosed(pc.conn.Closed()))
}

// reusable reports whether pc may serve another call after one that ended
// with err: after success or an error the server sent, unless the connection
// is closing. A canceled call's connection is being torn down by DRPC.
func reusable(ctx context.Context, pc *pooledConn, err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return false
	}
	noteRefusal(pc, err)
	return !isClosed(pc.conn.Closed()) && !isConnFailure(err) && !pc.refused.Load()
}

// noteRefusal marks pc refused when err is UNAUTHENTICATED: the node closes
// a connection it refused (plaintext on a TLS port, a failed sign-in), so
// no other call may take it.
func noteRefusal(pc *pooledConn, err error) {
	if pb.ErrorCode(drpcerr.Code(err)) == pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED {
		pc.refused.Store(true)
	}
}

// releasedCtx is a stream's context whose Done waits for the connection's
// return to the pool.
type releasedCtx struct {
	context.Context
	released chan struct{}
}

// Done is closed once the connection is back in the pool.
func (c *releasedCtx) Done() <-chan struct{} { return c.released }

// Err is nil until Done is closed, then the stream context's error.
func (c *releasedCtx) Err() error {
	select {
	case <-c.released:
		return c.Context.Err()
	default:
		return nil
	}
}

// outgoing adds this node's cluster id to the call's metadata.
func (p *Pool) outgoing(ctx context.Context) context.Context {
	if p.cfg.ClusterID == nil {
		return ctx
	}
	id := p.cfg.ClusterID()
	if id == "" {
		return ctx
	}
	return withMetadata(ctx, MetadataClusterID, id)
}

// withMetadata returns ctx with key=value in its outgoing DRPC metadata.
// drpcmetadata.Add would write into the map ctx already holds, if any: in a
// handler, the incoming call's map, which other goroutines may read. So the
// metadata is copied into a context of its own that overlays ctx.
func withMetadata(ctx context.Context, key, value string) context.Context {
	md, _ := drpcmetadata.Get(ctx)
	merged := make(map[string]string, len(md)+1)
	maps.Copy(merged, md)
	merged[key] = value
	return &overlayCtx{Context: ctx, values: drpcmetadata.AddPairs(context.Background(), merged)}
}

// overlayCtx is ctx with the values of another context taking precedence.
type overlayCtx struct {
	context.Context
	values context.Context
}

// Value returns the overlay's value for key, else the underlying context's.
func (c *overlayCtx) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
