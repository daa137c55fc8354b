package client

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"storj.io/drpc"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// A client's writes to a node go on one ordered stream (Tablet.Writes):
// the node takes the calls in the order they were sent, so a writer may
// have several batches of a bucket in flight and still have them decided
// in sequence, and answers each as it completes. writeStreams keeps one
// stream per node address, opening it on first use and again after it
// broke.

// writeStreams are a client's write streams, by node address.
type writeStreams struct {
	c *Client

	mu      sync.Mutex
	streams map[string]*writeStream
	closed  bool
}

// writeOutcome is the answer to one write call.
type writeOutcome struct {
	resp *pb.ProduceResponse
	err  error
	// unanswered: the call went out on a stream that broke before the
	// node answered it; the node may still decide it.
	unanswered bool
}

// writeStream is one open stream to a node.
type writeStream struct {
	addr   string
	stream pb.DRPCTablet_WritesClient
	cancel context.CancelFunc
	kick   chan struct{} // capacity 1: calls are queued

	mu      sync.Mutex
	nextID  uint64
	queue   []*pb.WriteCall // to send, in call order
	pending map[uint64]func(writeOutcome)
	broken  error // set once: every later call fails with it
}

// stream returns the open stream to addr, opening one if there is none or
// the last one broke.
func (w *writeStreams) stream(ctx context.Context, addr string) (*writeStream, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if s := w.streams[addr]; s != nil && s.err() == nil {
		return s, nil
	}
	// The stream lives past the call that opens it: its context is the
	// client's, not ctx (which bounds only the wait for a connection).
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	st, err := pb.NewDRPCTabletClient(w.c.pool.Conn(addr)).Writes(sctx)
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open write stream to %s: %w", addr, transport.FromWire(err))
	}
	s := &writeStream{addr: addr, stream: st, cancel: cancel, kick: make(chan struct{}, 1),
		pending: map[uint64]func(writeOutcome){}}
	if w.streams == nil {
		w.streams = map[string]*writeStream{}
	}
	w.streams[addr] = s
	go s.receive()
	go s.send(sctx)
	return s, nil
}

// close ends every stream; calls in flight fail.
func (w *writeStreams) close() {
	w.mu.Lock()
	w.closed = true
	streams := w.streams
	w.streams = nil
	w.mu.Unlock()
	for _, s := range streams {
		s.fail(fmt.Errorf("%w: write stream to %s closed", ErrClosed, s.addr))
	}
}

func (s *writeStream) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// start queues a call for the stream's sender; done gets its outcome,
// once, from another goroutine (or this one, when the stream is broken),
// and must not block. Calls go out in the order they were started.
func (s *writeStream) start(call *pb.WriteCall, done func(writeOutcome)) {
	s.mu.Lock()
	if s.broken != nil {
		err := s.broken
		s.mu.Unlock()
		done(writeOutcome{err: err})
		return
	}
	s.nextID++
	call.Id = s.nextID
	s.pending[call.Id] = done
	s.queue = append(s.queue, call)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// send writes the queued calls, every call queued meanwhile in one flush,
// until the stream ends. A stream that cannot send breaks, and its calls
// fail with it.
func (s *writeStream) send(ctx context.Context) {
	var raw drpc.Stream = s.stream
	if g, ok := s.stream.(interface{ GetStream() drpc.Stream }); ok {
		raw = g.GetStream()
	}
	w := transport.NewMessageWriter(raw)
	var calls []*pb.WriteCall
	for {
		select {
		case <-s.kick:
		case <-ctx.Done():
			return
		}
		// Callers woken by the same answers (a group commit acks many at
		// once) are runnable now: let them queue their next calls first,
		// so one flush carries them all. With nothing else to run this
		// returns at once.
		runtime.Gosched()
		s.mu.Lock()
		calls, s.queue = s.queue, calls[:0]
		s.mu.Unlock()
		var err error
		for i, call := range calls {
			if err == nil {
				err = w.Write(call)
			}
			calls[i] = nil
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			s.fail(s.brokenErr(err))
			return
		}
	}
}

// receive hands each result to its call until the stream ends.
func (s *writeStream) receive() {
	for {
		res, err := s.stream.Recv()
		if err != nil {
			s.fail(s.brokenErr(err))
			return
		}
		s.mu.Lock()
		done, ok := s.pending[res.Id]
		delete(s.pending, res.Id)
		s.mu.Unlock()
		if !ok {
			continue // a call the stream does not know: answered twice, or a confused server
		}
		if res.Response != nil {
			done(writeOutcome{resp: res.Response})
		} else {
			done(writeOutcome{err: transport.ResultError(res.ErrorCode, res.ErrorMessage)})
		}
	}
}

// brokenErr is what the calls of a stream that failed with err get: a
// retriable UNAVAILABLE unless the stream's own error says otherwise. Their
// outcome is unknown; the writers' retries settle it.
func (s *writeStream) brokenErr(err error) error {
	err = transport.FromWire(err)
	if transport.IsRetriable(err) {
		return fmt.Errorf("write stream to %s: %w", s.addr, err)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "write stream to %s broke: %v", s.addr, err)
}

// fail breaks the stream: every call in flight and every later one fails
// with err.
func (s *writeStream) fail(err error) {
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
	}
	pending := s.pending
	s.pending = map[uint64]func(writeOutcome){}
	s.mu.Unlock()
	s.cancel()
	for _, done := range pending {
		done(writeOutcome{err: err, unanswered: true})
	}
}
