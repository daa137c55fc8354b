package server

import (
	"context"
	"errors"
	"sync"
	"testing"

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

// TestResultWriterAnswersEveryCallOnce: calls finishing while another's
// result is being written each get theirs written once, by that writer;
// after a failed write the rest are dropped, and no sender blocks.
func TestResultWriterAnswersEveryCallOnce(t *testing.T) {
	for _, failAt := range []int{0, 300} {
		st := &recordingStream{failAt: failAt, inFirst: make(chan struct{}), release: make(chan struct{})}
		inFirst := st.inFirst
		rw := &resultWriter{w: transport.NewMessageWriter(st)}
		const calls = 1000
		first := make(chan struct{})
		go func() { rw.send(&pb.WriteResult{Id: 0}); close(first) }()
		<-inFirst // call 0 is the writer, held in its send
		var wg sync.WaitGroup
		for id := range uint64(calls - 1) {
			wg.Go(func() { rw.send(&pb.WriteResult{Id: id + 1}) }) // queue and return
		}
		wg.Wait()
		close(st.release)
		<-first // the writer wrote everything queued behind it
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
		if rw.writing || len(rw.queue) != 0 {
			t.Fatalf("failAt %d: writer left writing=%v with %d queued", failAt, rw.writing, len(rw.queue))
		}
	}
}
