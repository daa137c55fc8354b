package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"storj.io/drpc/drpcerr"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

func TestToWire(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		code    pb.ErrorCode
		message string
	}{
		{"error", transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d leads", 2), pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node 2 leads"},
		{"sentinel", transport.ErrUnknownTable, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, ""},
		{"wrapped", fmt.Errorf("drop: %w", transport.ErrNotEmpty), pb.ErrorCode_ERROR_CODE_NOT_EMPTY, "drop: not empty"},
		{"wire coder", fencedError{epoch: 3}, pb.ErrorCode_ERROR_CODE_FENCED, "bucket epoch 3 is stale"},
		{"deadline", fmt.Errorf("apply: %w", context.DeadlineExceeded), pb.ErrorCode_ERROR_CODE_TIMEOUT, "apply: context deadline exceeded"},
		{"canceled", context.Canceled, pb.ErrorCode_ERROR_CODE_TIMEOUT, "context canceled"},
		{"plain", errors.New("disk on fire"), pb.ErrorCode_ERROR_CODE_INTERNAL, "disk on fire"},
		{"drpc unimplemented", drpcerr.WithCode(errors.New("Unimplemented"), drpcerr.Unimplemented), pb.ErrorCode_ERROR_CODE_INTERNAL, "Unimplemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := transport.ToWire(tc.err)
			if got := pb.ErrorCode(drpcerr.Code(w)); got != tc.code {
				t.Errorf("code %v, want %v", got, tc.code)
			}
			if w.Error() != tc.message {
				t.Errorf("wire text %q, want %q", w.Error(), tc.message)
			}
			back := transport.FromWire(w)
			var e *transport.Error
			if !errors.As(back, &e) || e.Code != tc.code || e.Message != tc.message {
				t.Errorf("FromWire(ToWire) = %#v, want code %v message %q", back, tc.code, tc.message)
			}
		})
	}
	if transport.ToWire(nil) != nil || transport.FromWire(nil) != nil {
		t.Error("nil must stay nil")
	}
}

func TestFromWireLocalFailures(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"refused", refused, transport.ErrUnavailable},
		{"eof", io.EOF, transport.ErrUnavailable},
		{"closed", fmt.Errorf("write: %w", net.ErrClosed), transport.ErrUnavailable},
		{"canceled", context.Canceled, context.Canceled},
		{"deadline", context.DeadlineExceeded, context.DeadlineExceeded},
		{"uncoded", errors.New("remote said no"), transport.ErrInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := transport.FromWire(tc.err)
			if !errors.Is(got, tc.want) {
				t.Fatalf("FromWire(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if tc.want == transport.ErrUnavailable && !transport.IsRetriable(got) {
				t.Errorf("%v is not retriable", got)
			}
		})
	}
}

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("create: %w", transport.Errorf(pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "table t"))
	switch {
	case !errors.Is(err, transport.ErrAlreadyExists):
		t.Error("wrapped *Error does not match its sentinel")
	case errors.Is(err, transport.ErrNotLeader):
		t.Error("matches another code")
	case errors.Is(err, &transport.Error{Code: pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, Message: "table u"}):
		t.Error("matches another message")
	case transport.IsRetriable(err):
		t.Error("ALREADY_EXISTS is retriable")
	case !transport.IsRetriable(transport.ErrNotLeader):
		t.Error("NOT_LEADER is not retriable")
	case transport.IsRetriable(errors.New("plain")):
		t.Error("a plain error is retriable")
	}
	if got := err.Error(); got != "create: already exists: table t" {
		t.Errorf("text %q", got)
	}
	if got := (&transport.Error{Code: 99}).Error(); got != "error code 99" {
		t.Errorf("unknown code reads %q", got)
	}
}
