package transport

import (
	"errors"
	"fmt"

	"github.com/floedb/floe/transport/pb"
)

// codeInfo is one row of the error table: how a code reads and whether a
// caller may try again.
type codeInfo struct {
	name      string
	retriable bool
}

// codes is the one table of wire error codes. A code missing from it (one
// added by a newer peer) reads as "error code N" and is not retriable.
var codes = map[pb.ErrorCode]codeInfo{
	pb.ErrorCode_ERROR_CODE_INTERNAL:                         {"internal error", false},
	pb.ErrorCode_ERROR_CODE_NOT_LEADER:                       {"not leader", true},
	pb.ErrorCode_ERROR_CODE_FENCED:                           {"fenced", false},
	pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE:                 {"unknown database", false},
	pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE:                    {"unknown table", false},
	pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS:                   {"already exists", false},
	pb.ErrorCode_ERROR_CODE_INVALID_REQUEST:                  {"invalid request", false},
	pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS:              {"not enough replicas", true},
	pb.ErrorCode_ERROR_CODE_NOT_EMPTY:                        {"not empty", false},
	pb.ErrorCode_ERROR_CODE_CLUSTER_MISMATCH:                 {"cluster mismatch", false},
	pb.ErrorCode_ERROR_CODE_UNAVAILABLE:                      {"unavailable", true},
	pb.ErrorCode_ERROR_CODE_TIMEOUT:                          {"timeout", true},
	pb.ErrorCode_ERROR_CODE_TOO_LARGE:                        {"too large", false},
	pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE:                     {"out of range", false},
	pb.ErrorCode_ERROR_CODE_INVALID_RECORD:                   {"invalid record", false},
	pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE:                     {"unknown node", false},
	pb.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE:            {"out of order sequence", false},
	pb.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH:             {"unknown leader epoch", true},
	pb.ErrorCode_ERROR_CODE_BUCKET_OFFLINE:                   {"bucket offline", true},
	pb.ErrorCode_ERROR_CODE_CORRUPT:                          {"corrupt data", false},
	pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND: {"not enough replicas after append", true},
	pb.ErrorCode_ERROR_CODE_QUORUM_AT_RISK:                   {"quorum at risk", false},
	pb.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA:               {"ineligible replica", false},
	pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED:                  {"unauthenticated", false},
	pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED:                   {"not authorized", false},
	pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA:                   {"unknown schema version", false},
	pb.ErrorCode_ERROR_CODE_UNKNOWN_PARTITION:                {"unknown partition", false},
}

// CodeName returns how a code reads in error messages ("not leader").
func CodeName(code pb.ErrorCode) string {
	if info, ok := codes[code]; ok {
		return info.name
	}
	return fmt.Sprintf("error code %d", int32(code))
}

// Error is a failed call as it travels between nodes: a wire code and a
// message. Handlers return it (or any error with a WireCode method) to choose
// the code their caller sees; clients get it back from every failed call.
type Error struct {
	// Code is the typed error code.
	Code pb.ErrorCode
	// Message says what happened, without the code's name.
	Message string
}

// Error returns the code's name, then the message: "not leader: node 2 leads".
func (e *Error) Error() string {
	name := CodeName(e.Code)
	if e.Message == "" {
		return name
	}
	return name + ": " + e.Message
}

// WireCode returns e.Code: the code ToWire sends for e.
func (e *Error) WireCode() pb.ErrorCode { return e.Code }

// Retriable reports whether the same request may succeed if sent again
// (possibly to another node, after fresh metadata).
func (e *Error) Retriable() bool { return codes[e.Code].retriable }

// Is makes errors.Is(err, ErrNotLeader) true for every *Error with that code.
// A target with a message also needs the same message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code pb.ErrorCode, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// IsRetriable reports whether err is, or wraps, a retriable *Error.
func IsRetriable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retriable()
}

// Sentinels, one per code, for errors.Is. They carry no message; Errorf makes
// errors that match them.
var (
	ErrInternal          = &Error{Code: pb.ErrorCode_ERROR_CODE_INTERNAL}
	ErrNotLeader         = &Error{Code: pb.ErrorCode_ERROR_CODE_NOT_LEADER}
	ErrFenced            = &Error{Code: pb.ErrorCode_ERROR_CODE_FENCED}
	ErrUnknownDatabase   = &Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE}
	ErrUnknownTable      = &Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE}
	ErrAlreadyExists     = &Error{Code: pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS}
	ErrInvalidRequest    = &Error{Code: pb.ErrorCode_ERROR_CODE_INVALID_REQUEST}
	ErrNotEnoughReplicas = &Error{Code: pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS}
	ErrNotEmpty          = &Error{Code: pb.ErrorCode_ERROR_CODE_NOT_EMPTY}
	ErrClusterMismatch   = &Error{Code: pb.ErrorCode_ERROR_CODE_CLUSTER_MISMATCH}
	ErrUnavailable       = &Error{Code: pb.ErrorCode_ERROR_CODE_UNAVAILABLE}
	ErrTimeout           = &Error{Code: pb.ErrorCode_ERROR_CODE_TIMEOUT}
	ErrTooLarge          = &Error{Code: pb.ErrorCode_ERROR_CODE_TOO_LARGE}
	ErrOutOfRange        = &Error{Code: pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE}
	ErrInvalidRecord     = &Error{Code: pb.ErrorCode_ERROR_CODE_INVALID_RECORD}
	ErrUnknownNode       = &Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE}
	// ErrUnknownSchema: a batch's schema version is not one the table has.
	ErrUnknownSchema = &Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA}
	// ErrUnknownPartition: a partition that does not exist (never created,
	// dropped, or, to a writer, not created on write by the table).
	ErrUnknownPartition = &Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_PARTITION}
	// ErrOutOfOrderSequence: an idempotent writer's batch out of sequence.
	ErrOutOfOrderSequence = &Error{Code: pb.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE}
	// ErrUnknownLeaderEpoch: the replica has not seen that epoch yet.
	ErrUnknownLeaderEpoch = &Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH}
	// ErrBucketOffline: no in-sync replica of the bucket is alive.
	ErrBucketOffline = &Error{Code: pb.ErrorCode_ERROR_CODE_BUCKET_OFFLINE}
	// ErrCorrupt: damaged data.
	ErrCorrupt = &Error{Code: pb.ErrorCode_ERROR_CODE_CORRUPT}
	// ErrQuorumAtRisk: a membership change refused for the metadata
	// group's quorum.
	ErrQuorumAtRisk = &Error{Code: pb.ErrorCode_ERROR_CODE_QUORUM_AT_RISK}
	// ErrUnauthenticated: the caller has not proven who it is.
	ErrUnauthenticated = &Error{Code: pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED}
	// ErrNotAuthorized: the caller may not make the call.
	ErrNotAuthorized = &Error{Code: pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED}
)
