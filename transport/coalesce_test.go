package transport

import (
	"testing"

	"storj.io/drpc"

	"github.com/floedb/floe/transport/pb"
)

// TestMessageWriterFallback: a stream that cannot buffer sends each
// message as it is written.
func TestMessageWriterFallback(t *testing.T) {
	s := &recordingStream{}
	w := NewMessageWriter(s)
	if err := w.Write(&pb.ProduceResponse{BaseOffset: 7}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil || s.sent != 1 {
		t.Fatalf("flush: %v, %d messages sent, want 1", err, s.sent)
	}
}

// recordingStream counts the messages sent on it.
type recordingStream struct {
	drpc.Stream
	sent int
}

func (s *recordingStream) MsgSend(drpc.Message, drpc.Encoding) error { s.sent++; return nil }
