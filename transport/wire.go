package transport

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"syscall"

	"storj.io/drpc"
	"storj.io/drpc/drpcerr"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// wireCoder is what ToWire looks for in an error chain: *Error, or any
// package's error that knows its wire code.
type wireCoder interface {
	error
	WireCode() pb.ErrorCode
}

// ToWire turns a handler's error into what goes on the wire: the DRPC error
// code is the pb.ErrorCode and the text is the message alone. It is the one
// place where Go errors become codes (the Server applies it to every handler's
// error):
//
//   - nil stays nil;
//   - an *Error, or an error with a WireCode() pb.ErrorCode method (found
//     with errors.As), keeps its code;
//   - context.DeadlineExceeded and context.Canceled become TIMEOUT;
//   - anything else is INTERNAL, its text kept as the message.
//
// A message is the error's text without the Go package names of the
// libraries' errors in it (pkgerr.Message): it is read by people.
//
// INTERNAL is code 0, which DRPC sends as "no code".
func ToWire(err error) error {
	if err == nil {
		return nil
	}
	code, message := wireCodeOf(err)
	return drpcerr.WithCode(errors.New(message), uint64(code))
}

// WireCodeOf is the code and message ToWire would send for err: what a
// stream that answers calls in its own messages (Tablet.Writes) puts in
// them. ResultError turns them back into an error.
func WireCodeOf(err error) (pb.ErrorCode, string) { return wireCodeOf(err) }

// ResultError is the error a result message carrying code and message
// stands for (see WireCodeOf).
func ResultError(code pb.ErrorCode, message string) error {
	return &Error{Code: code, Message: message}
}

// wireCodeOf picks the code and message ToWire sends for err.
func wireCodeOf(err error) (pb.ErrorCode, string) {
	var wc wireCoder
	switch {
	case errors.As(err, &wc):
		// An *Error under wrappers that add no text (drpcmux wraps every
		// handler error) sends its bare message; otherwise the whole text
		// goes, so the context wrappers added is kept.
		if e, ok := wc.(*Error); ok && err.Error() == e.Error() {
			return e.Code, e.Message
		}
		return wc.WireCode(), pkgerr.Message(err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return pb.ErrorCode_ERROR_CODE_TIMEOUT, pkgerr.Message(err)
	default:
		return pb.ErrorCode_ERROR_CODE_INTERNAL, pkgerr.Message(err)
	}
}

// FromWire turns an error out of a DRPC call into what callers check with
// errors.Is:
//
//   - nil stays nil, and an *Error (or an error wrapping one) is kept;
//   - an error carrying a DRPC code becomes an *Error with that code and the
//     server's message;
//   - context.Canceled and context.DeadlineExceeded are kept as they are;
//   - a connection failure (dial refused, reset, EOF, closed connection)
//     becomes an *Error with code UNAVAILABLE, which is retriable;
//   - anything else is an *Error with code INTERNAL: an error the server sent
//     without a code.
//
// Calls made through a Pool come out of it already converted.
func FromWire(err error) error {
	return fromWire(err, false)
}

// fromWire is FromWire for a caller that also knows whether the connection
// the call used is gone (connBroken), which makes the failure UNAVAILABLE.
func fromWire(err error, connBroken bool) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var coded interface {
		error
		Code() uint64
	}
	if errors.As(err, &coded) {
		code := pb.ErrorCode_ERROR_CODE_INTERNAL
		if c := coded.Code(); c <= math.MaxInt32 {
			code = pb.ErrorCode(c)
		}
		return &Error{Code: code, Message: coded.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if connBroken || isConnFailure(err) {
		return &Error{Code: pb.ErrorCode_ERROR_CODE_UNAVAILABLE, Message: err.Error()}
	}
	return &Error{Code: pb.ErrorCode_ERROR_CODE_INTERNAL, Message: err.Error()}
}

// isConnFailure reports whether err says the connection could not be made or
// is gone, as opposed to the server refusing the call.
func isConnFailure(err error) bool {
	for _, target := range []error{
		io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if drpc.ClosedError.Has(e) {
			return true
		}
	}
	return false
}
