package transport

import (
	"google.golang.org/protobuf/proto"
	"storj.io/drpc"
	"storj.io/drpc/drpcwire"
)

// A stream that answers many calls (Tablet.Writes) sends its messages as
// they are ready; one write per message costs a syscall each. A
// MessageWriter buffers the messages a sender has at hand and writes them
// in one go: Write buffers (the stream's writer flushes on its own once its
// buffer fills), Flush sends what is buffered.

// MessageWriter writes a stream's messages, buffered until Flush. One
// goroutine at a time may use it.
type MessageWriter struct {
	raw rawStream
	// fallback: the stream cannot buffer; every Write sends.
	fallback drpc.Stream
	// buf is where Write marshals: the stream copies a message out of it
	// before RawWrite returns, so it serves the next one.
	buf []byte
}

// unwrapper is a stream wrapping another (hookedStream, poolStream).
type unwrapper interface{ Unwrap() drpc.Stream }

func (s *hookedStream) Unwrap() drpc.Stream { return s.Stream }
func (s *poolStream) Unwrap() drpc.Stream   { return s.Stream }

// NewMessageWriter returns a writer of protobuf messages on stream, the
// stream a generated stream's GetStream returns.
func NewMessageWriter(stream drpc.Stream) *MessageWriter {
	inner := stream
	for {
		u, ok := inner.(unwrapper)
		if !ok {
			break
		}
		inner = u.Unwrap()
	}
	if raw, ok := inner.(rawStream); ok {
		return &MessageWriter{raw: raw}
	}
	return &MessageWriter{fallback: stream}
}

// protoEncoding marshals the messages of a fallback stream.
type protoEncoding struct{}

func (protoEncoding) Marshal(msg drpc.Message) ([]byte, error) {
	return proto.Marshal(msg.(proto.Message))
}
func (protoEncoding) MarshalAppend(buf []byte, msg drpc.Message) ([]byte, error) {
	return proto.MarshalOptions{}.MarshalAppend(buf, msg.(proto.Message))
}
func (protoEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	return proto.Unmarshal(buf, msg.(proto.Message))
}

// Write buffers msg.
func (w *MessageWriter) Write(msg proto.Message) error {
	if w.fallback != nil {
		return w.fallback.MsgSend(msg, protoEncoding{})
	}
	data, err := proto.MarshalOptions{}.MarshalAppend(w.buf[:0], msg)
	if err != nil {
		return err
	}
	if cap(data) <= maxPooledReplyBytes {
		w.buf = data
	}
	return FromWire(w.raw.RawWrite(drpcwire.KindMessage, data))
}

// Flush sends what Write buffered.
func (w *MessageWriter) Flush() error {
	if w.fallback != nil {
		return nil
	}
	return FromWire(w.raw.RawFlush())
}
