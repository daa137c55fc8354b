package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport/internal/pipenet"
)

// scriptedConn is a server connection whose client sent in and reads out.
type scriptedConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *scriptedConn) Read(p []byte) (int, error)         { return c.in.Read(p) }
func (c *scriptedConn) Write(p []byte) (int, error)        { return c.out.Write(p) }
func (c *scriptedConn) Close() error                       { return nil }
func (c *scriptedConn) LocalAddr() net.Addr                { return pipenet.Addr{} }
func (c *scriptedConn) RemoteAddr() net.Addr               { return pipenet.Addr{} }
func (c *scriptedConn) SetDeadline(t time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(t time.Time) error { return nil }

// FuzzFrameLimiter feeds any bytes a client could send through limitedConn
// and checks what DRPC's reader would get: whole frames, no packet over the
// limit, and for every packet refused an error frame back to the client.
func FuzzFrameLimiter(f *testing.F) {
	frame := func(stream, message uint64, kind drpcwire.Kind, done bool, data string) []byte {
		return drpcwire.AppendFrame(nil, drpcwire.Frame{ID: drpcwire.ID{Stream: stream, Message: message}, Kind: kind, Done: done, Data: []byte(data)})
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(uint8(16), cat(frame(1, 1, drpcwire.KindInvoke, true, "/floe.v1.Meta/Hello"), frame(1, 2, drpcwire.KindMessage, true, "hi")))
	f.Add(uint8(4), cat(frame(1, 1, drpcwire.KindInvoke, true, "/x"), frame(1, 2, drpcwire.KindMessage, false, "abc"), frame(1, 2, drpcwire.KindMessage, true, "def"),
		frame(2, 1, drpcwire.KindInvoke, true, "/y")))
	f.Add(uint8(2), cat(frame(1, 1, drpcwire.KindInvokeMetadata, true, "metadata"), frame(1, 1, drpcwire.KindInvoke, true, "/z")))
	f.Add(uint8(8), frame(3, 7, drpcwire.KindMessage, false, "cut")[:5])
	f.Add(uint8(8), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, limit uint8, in []byte) {
		maxBytes := int(limit%64) + 1
		conn := &scriptedConn{in: bytes.NewReader(in)}
		lc := newLimitedConn(conn, maxBytes, time.Second, nil, slog.New(slog.DiscardHandler))

		// What DRPC's reader gets, read in small pieces as it may.
		var got []byte
		buf := make([]byte, 7)
		var readErr error
		for range 1 << 16 {
			var n int
			n, readErr = lc.Read(buf)
			got = append(got, buf[:n]...)
			if readErr != nil {
				break
			}
		}
		if readErr == nil {
			t.Fatal("no end after 65536 reads")
		}
		if !errors.Is(readErr, io.EOF) && !errors.Is(readErr, io.ErrUnexpectedEOF) && !malformed(in) {
			t.Fatalf("read error %v on frames DRPC parses", readErr)
		}

		// Whole frames, packets within the limit (a refused packet's
		// cancel has no data). A packet is a run of frames of one id, as
		// DRPC's reader sees it: another id starts another packet.
		var packet drpcwire.ID
		var size int
		rest := got
		for len(rest) > 0 {
			var fr drpcwire.Frame
			var ok bool
			var err error
			rest, fr, ok, err = drpcwire.ParseFrame(rest)
			if err != nil {
				t.Fatalf("passed bytes do not parse: %v", err)
			}
			if !ok { // only the input's own last frame may be cut
				if !errors.Is(readErr, io.ErrUnexpectedEOF) {
					t.Fatalf("a cut frame passed, then %v", readErr)
				}
				break
			}
			if fr.ID != packet {
				packet, size = fr.ID, 0
			}
			size += len(fr.Data)
			if size > maxBytes {
				t.Fatalf("packet %v passed with %d bytes, over the %d-byte limit", fr.ID, size, maxBytes)
			}
			if fr.Done {
				packet, size = drpcwire.ID{}, 0
			}
		}

		// The client hears only whole error frames.
		rest = conn.out.Bytes()
		for len(rest) > 0 {
			var fr drpcwire.Frame
			var ok bool
			var err error
			rest, fr, ok, err = drpcwire.ParseFrame(rest)
			if err != nil || !ok {
				t.Fatalf("the client was sent a broken frame: %v", err)
			}
			if fr.Kind != drpcwire.KindError || !fr.Done {
				t.Fatalf("the client was sent %v, want only errors", fr)
			}
		}
	})
}

// malformed reports whether in, read as a sequence of frames, fails DRPC's
// parser or has a header varint over 64 bits, which DRPC wraps around and
// limitedConn refuses (DRPC's writer never sends one).
func malformed(in []byte) bool {
	for len(in) > 0 {
		header := in[1:]
		for range 3 {
			_, n := binary.Uvarint(header)
			switch {
			case n < 0, n == 0 && len(header) >= binary.MaxVarintLen64:
				return true
			case n == 0:
				return false // cut short
			}
			header = header[n:]
		}
		var ok bool
		var err error
		if in, _, ok, err = drpcwire.ParseFrame(in); err != nil {
			return true
		} else if !ok {
			return false
		}
	}
	return false
}
