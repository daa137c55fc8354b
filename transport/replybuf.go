package transport

import (
	"sync"

	"storj.io/drpc"
	"storj.io/drpc/drpcwire"
)

// Messages are marshaled into buffers kept for the next message rather
// than into a fresh one each: a served stream's (DRPC marshals into its
// stream's buffer, and every unary call has a stream of its own, so each
// reply was a new allocation of its size: a 500-key lookup's ~170 KiB
// answer, most of a node's allocated bytes under batched lookups), and a
// client's requests and stream messages. A stream's writer copies a
// message into its frame buffer (or writes it out) before RawWrite
// returns, so the buffer is free again then.

// maxPooledReplyBytes bounds the buffers kept: a rare huge reply's goes to
// the garbage collector.
const maxPooledReplyBytes = 8 << 20

var replyBufs = sync.Pool{New: func() any { return new([]byte) }}

// putBuf gives a marshal buffer back to the pool, unless it grew too large
// to keep.
func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledReplyBytes {
		replyBufs.Put(bp)
	}
}

// appendMarshaler is an encoding that marshals into a given buffer (the
// generated DRPC encodings are).
type appendMarshaler interface {
	MarshalAppend(buf []byte, msg drpc.Message) ([]byte, error)
}

// MsgSend is drpc's MsgSend (marshal, write, flush unless the stream
// flushes manually) with the message marshaled into a pooled buffer.
func (s *hookedStream) MsgSend(msg drpc.Message, enc drpc.Encoding) error {
	raw, ok := s.Stream.(rawStream)
	ma, ok2 := enc.(appendMarshaler)
	if !ok || !ok2 {
		return s.Stream.MsgSend(msg, enc)
	}
	bp := replyBufs.Get().(*[]byte)
	data, err := ma.MarshalAppend((*bp)[:0], msg)
	if err == nil {
		err = raw.RawWrite(drpcwire.KindMessage, data)
	}
	*bp = data[:0]
	putBuf(bp)
	if err != nil || s.manualFlush {
		return err
	}
	return raw.RawFlush()
}
