package transport

import (
	"errors"
	"os"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// DRPC reads a packet until it is whole, with no deadline: a client that
// sends half of a 15 MiB message and then nothing holds the connection, its
// buffers and the handler waiting for the message for as long as it likes.
// DRPC's InactivityTimeout does not help: it only runs between calls. So
// limitedConn puts a read deadline on every packet once it has started:
//
//   - From the first byte of a packet's first frame header to the last byte
//     of its last frame ("mid-packet"), the socket's read deadline is the
//     moment limitedConn first had to wait for the socket in that packet,
//     plus messageTimeout. It is set once per packet, not per read, so a
//     client trickling a byte at a time gains nothing.
//   - Between packets there is no deadline: a stream may rightly wait a long
//     time for its next message (a writer with nothing to write), and
//     between calls DRPC's InactivityTimeout closes the connection.
//
// The deadline is only touched when the socket must be read (bufio's
// buffer is empty), and only when it changes, so a burst of small packets
// already buffered costs nothing. When it passes, the client is sent
// TIMEOUT on the stream it was sending on (when the server's writes leave
// room for it) and the read fails, which closes the connection.

// messageTimeoutFlag is the floe serve flag that sets
// ServerConfig.MessageTimeout, named in refusals and logs.
const messageTimeoutFlag = "--rpc-message-timeout"

// refusalWriteTimeout bounds the write of a courtesy error frame to a client
// about to be cut off: one that reads nothing must not hold the reader.
const refusalWriteTimeout = time.Second

// errMessageTimeout is why a connection whose client stalled inside a
// packet is closed.
var errMessageTimeout = pkgerr.New("transport", "request message not received in full within the message timeout")

// readerFunc is an io.Reader made of a function.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// fill is what c.r reads from: the socket, under the packet's deadline.
func (c *limitedConn) fill(p []byte) (int, error) {
	if c.messageTimeout > 0 {
		if err := c.armDeadline(); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(p)
	if err != nil && c.deadlineFor != 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut()
		return n, errMessageTimeout
	}
	return n, err
}

// midPacket reports whether a packet has started and not yet arrived whole.
func (c *limitedConn) midPacket() bool {
	return c.headerOpen || c.remaining > 0 || c.packetOpen
}

// armDeadline gives the socket the deadline of the current packet, or none
// between packets.
func (c *limitedConn) armDeadline() error {
	switch mid := c.midPacket(); {
	case mid && c.deadlineFor != c.packetSeq:
		c.deadlineFor = c.packetSeq
		return c.Conn.SetReadDeadline(time.Now().Add(c.messageTimeout))
	case !mid && c.deadlineFor != 0:
		c.deadlineFor = 0
		return c.Conn.SetReadDeadline(time.Time{})
	}
	return nil
}

// timedOut logs the stalled packet and tells the client, if the write side
// is free; the caller then fails the read, which closes the connection.
func (c *limitedConn) timedOut() {
	c.log.Warn("closing connection: request message not received in full within the message timeout",
		"remote_addr", c.RemoteAddr().String(), "stream", c.stream, "timeout", c.messageTimeout, "flag", messageTimeoutFlag)
	if c.stream == 0 || !c.writeMu.TryLock() {
		return // no stream to answer on, or the server's own write is stuck
	}
	defer c.writeMu.Unlock()
	frame := errorFrame(c.stream, Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT,
		"request message not received in full within %v (the server's %s); connection closed", c.messageTimeout, messageTimeoutFlag))
	if c.Conn.SetWriteDeadline(time.Now().Add(refusalWriteTimeout)) == nil {
		_, _ = c.Conn.Write(frame)
	}
}
