package transport

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport/pb"
)

// rawRecorder is a served stream that keeps what is written to it, as
// DRPC's does: the bytes are copied before RawWrite returns.
type rawRecorder struct {
	drpc.Stream
	msgs    [][]byte
	flushes int
	sent    int // MsgSend calls that reached the stream itself
	// last only: keep the last message, in a buffer of the recorder's own
	// (no allocation once it is large enough).
	last     []byte
	lastOnly bool
}

func (r *rawRecorder) RawWrite(kind drpcwire.Kind, data []byte) error {
	if kind != drpcwire.KindMessage {
		panic("not a message")
	}
	if r.lastOnly {
		r.last = append(r.last[:0], data...)
		return nil
	}
	r.msgs = append(r.msgs, bytes.Clone(data))
	return nil
}
func (r *rawRecorder) RawFlush() error { r.flushes++; return nil }
func (r *rawRecorder) MsgSend(drpc.Message, drpc.Encoding) error {
	r.sent++
	return nil
}

// marshalOnly has no MarshalAppend: such a stream's message goes the
// stream's own way.
type marshalOnly struct{}

func (marshalOnly) Marshal(msg drpc.Message) ([]byte, error) { return protoEncoding{}.Marshal(msg) }
func (marshalOnly) Unmarshal(buf []byte, msg drpc.Message) error {
	return protoEncoding{}.Unmarshal(buf, msg)
}

// TestHookedStreamSendsFromPooledBuffers: each message is written whole and
// right although one buffer serves them in turn, a stream that flushes
// per message is flushed after each, a unary call's is left to its end,
// and a big reply costs no allocation of its size once a buffer is pooled.
func TestHookedStreamSendsFromPooledBuffers(t *testing.T) {
	big := &pb.LookupResponse{Rows: bytes.Repeat([]byte("r"), 200<<10), RowSizes: []uint32{100 << 10, 100 << 10}, LeaderEpoch: 3}
	small := &pb.LookupResponse{Rows: []byte("x"), RowSizes: []uint32{1}, LeaderEpoch: 4}
	for _, manual := range []bool{false, true} {
		rec := &rawRecorder{}
		s := &hookedStream{Stream: rec, ctx: context.Background(), manualFlush: manual}
		for _, m := range []*pb.LookupResponse{big, small, big} {
			if err := s.MsgSend(m, protoEncoding{}); err != nil {
				t.Fatal(err)
			}
		}
		if len(rec.msgs) != 3 || rec.sent != 0 {
			t.Fatalf("manual %v: %d messages written, %d through the stream's MsgSend", manual, len(rec.msgs), rec.sent)
		}
		for i, m := range []*pb.LookupResponse{big, small, big} {
			got := &pb.LookupResponse{}
			if err := proto.Unmarshal(rec.msgs[i], got); err != nil || !proto.Equal(got, m) {
				t.Fatalf("manual %v: message %d reads back as %d bytes of rows, epoch %d (%v)", manual, i, len(got.Rows), got.LeaderEpoch, err)
			}
		}
		if want := map[bool]int{false: 3, true: 0}[manual]; rec.flushes != want {
			t.Fatalf("manual %v: %d flushes, want %d", manual, rec.flushes, want)
		}
	}
	rec := &rawRecorder{}
	s := &hookedStream{Stream: rec, ctx: context.Background(), manualFlush: true}
	if err := s.MsgSend(small, marshalOnly{}); err != nil || rec.sent != 1 || len(rec.msgs) != 0 {
		t.Fatalf("an encoding without MarshalAppend: sent %d, written %d, %v", rec.sent, len(rec.msgs), err)
	}
	// Once a buffer is pooled, a reply allocates nothing (the pool may
	// lose its buffer to a collection now and then).
	rec.lastOnly = true
	allocs := testing.AllocsPerRun(100, func() { _ = s.MsgSend(big, protoEncoding{}) })
	if allocs >= 0.5 {
		t.Fatalf("%.2f allocations per big reply, want none", allocs)
	}
	if got := (&pb.LookupResponse{}); proto.Unmarshal(rec.last, got) != nil || !proto.Equal(got, big) {
		t.Fatal("the last reply does not read back")
	}
}

// TestMessageWriterReusesItsBuffer: messages written in turn read back
// whole, and once its buffer is large enough a Write allocates nothing.
func TestMessageWriterReusesItsBuffer(t *testing.T) {
	rec := &rawRecorder{}
	w := &MessageWriter{raw: rec}
	big := &pb.LookupResponse{Rows: bytes.Repeat([]byte("w"), 64<<10), LeaderEpoch: 1}
	small := &pb.LookupResponse{Rows: []byte("y"), LeaderEpoch: 2}
	for _, m := range []*pb.LookupResponse{big, small} {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range []*pb.LookupResponse{big, small} {
		got := &pb.LookupResponse{}
		if err := proto.Unmarshal(rec.msgs[i], got); err != nil || !proto.Equal(got, m) {
			t.Fatalf("message %d does not read back (%v)", i, err)
		}
	}
	rec.lastOnly = true
	if allocs := testing.AllocsPerRun(100, func() { _ = w.Write(big) }); allocs >= 0.5 {
		t.Fatalf("%.2f allocations per Write, want none", allocs)
	}
}

// TestPoolMarshalKeepsItsBuffer: a request is marshaled into the buffer
// given, which keeps what it grew to for the next one; a request over
// MaxMessageBytes is refused with TOO_LARGE all the same.
func TestPoolMarshalKeepsItsBuffer(t *testing.T) {
	p := NewPool(PoolConfig{MaxMessageBytes: 100 << 10})
	defer p.Close()
	req := &pb.LookupRequest{TableId: 7, Keys: [][]byte{bytes.Repeat([]byte("k"), 40<<10)}}
	buf := new([]byte)
	data, err := p.marshal("lookup", protoEncoding{}, req, buf)
	if err != nil {
		t.Fatal(err)
	}
	got := &pb.LookupRequest{}
	if err := proto.Unmarshal(data, got); err != nil || !proto.Equal(got, req) {
		t.Fatalf("the request does not read back (%v)", err)
	}
	if cap(*buf) < len(data) || len(*buf) != 0 {
		t.Fatalf("buffer len %d cap %d after a %d-byte request: want it kept, empty", len(*buf), cap(*buf), len(data))
	}
	if allocs := testing.AllocsPerRun(50, func() { _, _ = p.marshal("lookup", protoEncoding{}, req, buf) }); allocs != 0 {
		t.Fatalf("%.1f allocations marshaling into a buffer large enough", allocs)
	}
	huge := &pb.LookupRequest{Keys: [][]byte{make([]byte, 200<<10)}}
	if _, err := p.marshal("lookup", protoEncoding{}, huge, buf); func() pb.ErrorCode { c, _ := WireCodeOf(err); return c }() != pb.ErrorCode_ERROR_CODE_TOO_LARGE {
		t.Fatalf("a request over MaxMessageBytes: %v", err)
	}
}
