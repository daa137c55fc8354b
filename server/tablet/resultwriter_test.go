package tablet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"storj.io/drpc"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// recordingStream is a drpc.Stream that records the results sent on it and
// fails every send from the failAt-th on (0: never).
type recordingStream struct {
	mu     sync.Mutex
	ids    []uint64
	sends  int
	failAt int
	// inFirst, when set, is closed as the first send begins, which then
	// waits for release.
	inFirst, release chan struct{}
}

func (s *recordingStream) Context() context.Context                  { return context.Background() }
func (s *recordingStream) MsgRecv(drpc.Message, drpc.Encoding) error { return errors.New("not read") }
func (s *recordingStream) CloseSend() error                          { return nil }
func (s *recordingStream) Close() error                              { return nil }
func (s *recordingStream) MsgSend(msg drpc.Message, _ drpc.Encoding) error {
	if s.inFirst != nil {
		close(s.inFirst)
		s.inFirst = nil
		<-s.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends++
	if s.failAt > 0 && s.sends >= s.failAt {
		return errors.New("stream gone")
	}
	s.ids = append(s.ids, msg.(*pb.WriteResult).Id)
	return nil
}

// heldWriter returns a resultWriter on st whose first call (id 0) is
// writing, held in its send until st.release closes, and a channel closed
// once that call's send returns.
func heldWriter(t *testing.T, st *recordingStream) (*resultWriter, chan struct{}) {
	t.Helper()
	st.inFirst, st.release = make(chan struct{}), make(chan struct{})
	inFirst := st.inFirst
	rw := newResultWriter(transport.NewMessageWriter(st))
	first := make(chan struct{})
	go func() { rw.send(&pb.WriteResult{Id: 0}); close(first) }()
	<-inFirst
	return rw, first
}

// queueResults sends results first..last-1 while the writer is held: each
// queues and returns.
func queueResults(rw *resultWriter, first, last uint64) {
	var wg sync.WaitGroup
	for id := first; id < last; id++ {
		wg.Go(func() { rw.send(&pb.WriteResult{Id: id}) })
	}
	wg.Wait()
}

// TestResultWriterTakesWhatQueued: results of calls that finished while
// another's was being written are written by that writer before it
// returns, each once; after a failed write the rest are dropped.
func TestResultWriterTakesWhatQueued(t *testing.T) {
	for _, failAt := range []int{0, 50} {
		st := &recordingStream{failAt: failAt}
		rw, first := heldWriter(t, st)
		const calls = 200
		queueResults(rw, 1, calls)
		close(st.release)
		await(t, first, "the writer to return")
		if rw.writing || len(rw.queue) != 0 {
			t.Fatalf("failAt %d: the writer returned writing=%v with %d results queued", failAt, rw.writing, len(rw.queue))
		}
		seen := map[uint64]bool{}
		for _, id := range st.ids {
			if seen[id] {
				t.Fatalf("failAt %d: result %d written twice", failAt, id)
			}
			seen[id] = true
		}
		switch {
		case failAt == 0 && len(seen) != calls:
			t.Fatalf("%d of %d results written", len(seen), calls)
		case failAt > 0 && (len(seen) != failAt-1 || st.sends != failAt):
			t.Fatalf("failAt %d: %d written, %d sends tried: want the sends to stop at the failure", failAt, len(seen), st.sends)
		}
	}
}

// TestResultWriterBoundsTheQueue: with the writer stuck (a client not
// reading), writesInFlight results queue and the next call waits, so the
// stream's reader stops taking calls instead of the queue growing.
func TestResultWriterBoundsTheQueue(t *testing.T) {
	st := &recordingStream{}
	rw, first := heldWriter(t, st)
	queueResults(rw, 1, writesInFlight+1)
	over := make(chan struct{})
	go func() { rw.send(&pb.WriteResult{Id: writesInFlight + 1}); close(over) }()
	waitFor(t, "the call past the bound to wait or queue", func() bool {
		select {
		case <-over:
			return true
		default:
		}
		rw.mu.Lock()
		defer rw.mu.Unlock()
		return rw.waiting == 1
	})
	select {
	case <-over:
		t.Fatalf("a call queued its result past %d waiting ones", writesInFlight)
	default:
	}
	close(st.release)
	await(t, first, "the writer to return")
	await(t, over, "the waiting call to return")
	if len(st.ids) != writesInFlight+2 {
		t.Fatalf("%d results written, want %d", len(st.ids), writesInFlight+2)
	}
}

// await waits for ch to close, failing the test after 10 s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
