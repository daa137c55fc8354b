package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport/pb"
)

// DRPC's own limit (drpcwire.ReaderOptions.MaximumBufferSize) fails the whole
// connection with a "data overflow" protocol error: the server closes it and
// the client only sees a reset, never why. limitedConn enforces the limit one
// step earlier, on the frames as they arrive, so that the caller learns why:
//
//  1. It reads the frame headers itself (control byte, then the varints
//     stream id, message id and data length) and counts the bytes of each
//     packet (the frames sharing one id).
//  2. When a packet would pass the limit, it drops that frame and every later
//     frame of the same stream, without buffering them.
//  3. It writes a TOO_LARGE error packet for that stream to the client, and,
//     when the server already runs the stream, hands the server a cancel
//     packet so the handler stops waiting for its request.
//
// The connection stays usable: DRPC runs one stream at a time, and the
// client's next call is a new stream, which passes again. The two injected
// packets carry message id refusedMessageID, above any id the stream has used,
// because DRPC rejects ids that go backwards.

// refusedMessageID is the message id of the packets limitedConn injects.
const refusedMessageID = 1 << 62

// readerSlackBytes is added to MaxMessageBytes for DRPC's own reader limit,
// which limitedConn keeps from ever being reached.
const readerSlackBytes = 64 << 10

// limitedConn is a server connection whose incoming packets are at most
// maxBytes and arrive within messageTimeout once started (readdeadline.go).
// Read is called by one goroutine (the DRPC manager's reader).
type limitedConn struct {
	net.Conn
	r              *bufio.Reader // reads through fill
	maxBytes       uint64
	messageTimeout time.Duration // 0: packets may take forever
	log            *slog.Logger

	writeMu sync.Mutex // keeps injected packets whole among the server's writes

	pending   []byte // bytes to hand to the reader before anything else
	remaining uint64 // data bytes left in the current frame
	discard   bool   // the current frame's data is dropped

	dropping   bool   // frames of dropStream are dropped
	dropStream uint64 //
	packet     drpcwire.ID
	packetSize uint64 // data bytes of packet so far
	invoked    uint64 // last stream whose invoke was passed on

	headerOpen  bool   // a frame header is read in part
	packetOpen  bool   // the last frame header read was not its packet's last
	stream      uint64 // stream of the last frame header read
	packetSeq   uint64 // packets started so far
	deadlineFor uint64 // packetSeq the read deadline was set for; 0: none set

	// The request budget (requestbudget.go, budgethold.go); nil: none.
	budget         *requestBudget
	budgetDeadline time.Time // until when the packet in reception may wait for it
	msgStream      uint64    // stream whose message packets msgCount counts
	msgCount       uint64    // message packets of msgStream passed whole
	closed         chan struct{}
	closeOnce      sync.Once

	holdMu     sync.Mutex
	growing    int64        // reserved for the packet in reception
	holds      []budgetHold // reserved for whole packets still being handled
	connClosed bool
}

func newLimitedConn(conn net.Conn, maxBytes int, messageTimeout time.Duration, budget *requestBudget, logger *slog.Logger) *limitedConn {
	c := &limitedConn{
		Conn:           conn,
		maxBytes:       uint64(maxBytes),
		messageTimeout: messageTimeout,
		budget:         budget,
		closed:         make(chan struct{}),
		log:            logger,
	}
	c.r = bufio.NewReaderSize(readerFunc(c.fill), 32<<10)
	return c
}

// Write writes p (whole frames, as DRPC's writer always does) atomically with
// respect to injected packets.
func (c *limitedConn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.Conn.Write(p)
}

// Read returns frame bytes that pass the limit. It never returns bytes of two
// frames at once, so DRPC's reader never holds more than one frame.
func (c *limitedConn) Read(p []byte) (int, error) {
	for {
		switch {
		case len(c.pending) > 0:
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			return n, nil
		case c.remaining > 0 && c.discard:
			n, err := c.r.Discard(int(min(c.remaining, 1<<20)))
			c.remaining -= uint64(n)
			if err != nil {
				return 0, unexpectedEOF(err)
			}
		case c.remaining > 0:
			n, err := c.r.Read(p[:min(uint64(len(p)), c.remaining)])
			c.remaining -= uint64(n)
			if n == 0 && err != nil {
				return 0, unexpectedEOF(err)
			}
			return n, nil
		default:
			if err := c.nextFrame(); err != nil {
				return 0, err
			}
		}
	}
}

// nextFrame reads a frame header and decides what happens to the frame.
func (c *limitedConn) nextFrame() error {
	control, err := c.r.ReadByte()
	if err != nil {
		return err // io.EOF here is a clean end between frames
	}
	if !c.packetOpen {
		c.packetSeq++
	}
	c.headerOpen = true
	var fields [3]uint64 // stream id, message id, data length
	for i := range fields {
		if fields[i], err = binary.ReadUvarint(c.r); err != nil {
			return unexpectedEOF(err)
		}
	}
	id := drpcwire.ID{Stream: fields[0], Message: fields[1]}
	length := fields[2]
	kind := drpcwire.Kind((control & 0b01111110) >> 1)
	done := control&0b00000001 != 0
	c.headerOpen, c.packetOpen, c.stream = false, !done, id.Stream

	if c.dropping && id.Stream == c.dropStream {
		c.remaining, c.discard = length, true
		return nil
	}
	c.dropping = false
	// The packet is what DRPC's reader sees: the frames passed to it. A
	// frame of another id starts another packet there; a frame refused
	// here never reaches it, so it changes nothing (were it counted as a
	// packet of its own, the frames of one id around it would pass as
	// two packets and DRPC would join them past the limit).
	var before uint64 // data bytes of this frame's packet already passed
	if id == c.packet {
		before = c.packetSize
	}
	if length > c.maxBytes-before {
		c.remaining, c.discard = length, true
		c.keepRefused(id.Stream)
		return c.refuse(id, kind, Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE,
			"%s packet of at least %d bytes is over the server's %d-byte limit", kind, before+length, c.maxBytes))
	}
	if err := c.reserve(before + length); err != nil {
		c.remaining, c.discard = length, true
		c.keepRefused(id.Stream)
		if errors.Is(err, errBudgetClosed) {
			return err
		}
		return c.refuse(id, kind, c.budgetRefusal(before+length))
	}
	c.packet, c.packetSize = id, before+length
	if done {
		c.packetDone(id, kind)
		c.packet, c.packetSize = drpcwire.ID{}, 0
		if kind == drpcwire.KindInvoke {
			c.invoked = id.Stream
		}
	}
	hdr := append(c.pending[:0], control)
	for _, f := range fields {
		hdr = binary.AppendUvarint(hdr, f)
	}
	c.pending, c.remaining, c.discard = hdr, length, false
	return nil
}

// refuse drops the rest of stream id.Stream, tells the client why (answer),
// and stops the server's side of the stream if it has started.
func (c *limitedConn) refuse(id drpcwire.ID, kind drpcwire.Kind, answer error) error {
	c.dropping, c.dropStream = true, id.Stream
	c.log.Warn("refusing a packet", "remote_addr", c.RemoteAddr().String(),
		"stream", id.Stream, "kind", kind.String(), "error", answer)

	frame := errorFrame(id.Stream, answer)
	c.writeMu.Lock()
	_, err := c.Conn.Write(frame)
	c.writeMu.Unlock()
	if err != nil {
		return err
	}
	// The server has a stream only once its invoke has passed; a cancel for a
	// stream it does not have would stall its reader.
	if kind != drpcwire.KindInvoke && kind != drpcwire.KindInvokeMetadata && id.Stream == c.invoked {
		c.pending = drpcwire.AppendFrame(c.pending[:0], drpcwire.Frame{
			ID:      drpcwire.ID{Stream: id.Stream, Message: refusedMessageID},
			Kind:    drpcwire.KindCancel,
			Done:    true,
			Control: true,
		})
		// A whole packet of its own in DRPC's reader: none is open after it.
		c.packet, c.packetSize = drpcwire.ID{}, 0
	}
	return nil
}

// errorFrame is a frame failing stream with err, as the server's own error
// replies do; its message id is refusedMessageID.
func errorFrame(stream uint64, err error) []byte {
	return drpcwire.AppendFrame(nil, drpcwire.Frame{
		ID:   drpcwire.ID{Stream: stream, Message: refusedMessageID},
		Kind: drpcwire.KindError,
		Done: true,
		Data: drpcwire.MarshalError(ToWire(err)),
	})
}

// unexpectedEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
