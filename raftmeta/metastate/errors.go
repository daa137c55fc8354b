package metastate

import (
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// Error is a refusal: a command or read that breaks a rule, with the code the
// transport sends for it. Refused commands carry the same code and message in
// their pb.CommandResult; ResultError turns one back into an *Error.
type Error struct {
	// Code is the wire error code.
	Code pb.ErrorCode
	// Msg says what was refused, naming the offending name or value.
	Msg string
}

func (e *Error) Error() string { return "metastate: " + e.Msg }

// UserMessage is Error without the package name (pkgerr.Message): what
// the transport sends a caller.
func (e *Error) UserMessage() string { return e.Msg }

// WireCode is the error code sent to callers.
func (e *Error) WireCode() pb.ErrorCode { return e.Code }

var (
	// ErrClosed: the state was closed, or a failed Restore left it without
	// a database file.
	ErrClosed = pkgerr.New("metastate", "closed")
	// ErrCorrupt marks a state file whose bytes do not decode: damage on
	// this replica, never a result of a command.
	ErrCorrupt = pkgerr.New("metastate", "corrupt state file")
)

// ResultError is the error a command result carries: nil on success (an
// empty error message), an *Error otherwise.
func ResultError(res *pb.CommandResult) error {
	if res == nil {
		return &Error{Code: pb.ErrorCode_ERROR_CODE_INTERNAL, Msg: "no result"}
	}
	if res.GetError() == "" {
		return nil
	}
	return &Error{Code: res.GetCode(), Msg: res.GetError()}
}

// errorf builds a refusal with a formatted message.
func errorf(code pb.ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Shorthands for the codes the state machine refuses with.
const (
	codeInternal          = pb.ErrorCode_ERROR_CODE_INTERNAL
	codeFenced            = pb.ErrorCode_ERROR_CODE_FENCED
	codeUnknownDatabase   = pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE
	codeUnknownTable      = pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE
	codeAlreadyExists     = pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS
	codeInvalidRequest    = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
	codeNotEnoughReplicas = pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS
	codeNotEmpty          = pb.ErrorCode_ERROR_CODE_NOT_EMPTY
	codeUnknownNode       = pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE
	codeIneligible        = pb.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA
)
