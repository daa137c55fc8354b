package arrowlog

import (
	"fmt"
	"strconv"

	"github.com/floedb/floe/internal/pkgerr"
)

// Sentinel errors. Errors returned by this package wrap one of them; match
// them with errors.Is or errors.As, never by their text.
var (
	// ErrInvalidPayload marks a payload that is not a valid Arrow record
	// batch of the decoder's schema: its structure (message, metadata,
	// field nodes, buffers, offsets) or one of its values. For a payload
	// read back from storage it means corruption. Errors about a value also
	// wrap the record package's error about it (a *record.ColumnError
	// matching record.ErrNullNotAllowed, record.ErrInvalidUTF8,
	// record.ErrOverflow, ...).
	ErrInvalidPayload = pkgerr.New("arrowlog", "invalid Arrow payload")

	// ErrUnsupportedType marks a column type with no Arrow mapping here.
	ErrUnsupportedType = pkgerr.New("arrowlog", "unsupported type")

	// ErrBodyTooLarge marks a payload whose buffers inflate past the
	// decoder's limit (DecoderConfig.MaxBodyBytes). Errors matching it are
	// *LimitError.
	ErrBodyTooLarge = pkgerr.New("arrowlog", "Arrow body over the limit")

	// ErrTimestampRange marks a TIMESTAMP(p) or TIMESTAMP_LTZ(p) value with
	// p from 7 to 9 that Arrow's int64 nanoseconds cannot hold. Errors
	// matching it are *TimestampRangeError.
	ErrTimestampRange = pkgerr.New("arrowlog", "timestamp outside the range of int64 nanoseconds")

	// ErrColumnTooLarge marks a STRING or BYTES column whose values in one
	// batch pass Arrow's int32 offsets (2 GiB): keep batches smaller.
	ErrColumnTooLarge = pkgerr.New("arrowlog", "column values over 2 GiB in one batch")

	// ErrBadProjection marks a list of columns to project that is empty,
	// out of range or has duplicates.
	ErrBadProjection = pkgerr.New("arrowlog", "bad projection")
)

// LimitError is a payload refused for what its buffers inflate to.
type LimitError struct {
	// AtLeastBytes is the uncompressed body size the payload's buffers
	// declare, summed until it passed the limit: at least this.
	AtLeastBytes int64
	// LimitBytes is DecoderConfig.MaxBodyBytes.
	LimitBytes int
}

// Error returns a message naming the size and the limit.
func (e *LimitError) Error() string { return "arrowlog: " + e.UserMessage() }

// UserMessage is Error without the package name (pkgerr.Message).
func (e *LimitError) UserMessage() string {
	return fmt.Sprintf("Arrow body inflates to at least %d bytes, over the %d-byte limit (MaxBodyBytes)",
		e.AtLeastBytes, e.LimitBytes)
}

// Unwrap returns ErrBodyTooLarge.
func (e *LimitError) Unwrap() error { return ErrBodyTooLarge }

// TimestampRangeError is a TIMESTAMP or TIMESTAMP_LTZ value of precision 7
// to 9 outside what Arrow's timestamp[ns] holds: int64 nanoseconds since
// the epoch, 1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807.
type TimestampRangeError struct {
	// Column is the column's name.
	Column string
	// Millis and NanosOfMilli are the value as record.RowView.Timestamp
	// returns it.
	Millis       int64
	NanosOfMilli int32
}

// Error returns a message naming the column, the value and the limit.
func (e *TimestampRangeError) Error() string { return "arrowlog: " + e.UserMessage() }

// UserMessage is Error without the package name (pkgerr.Message).
func (e *TimestampRangeError) UserMessage() string {
	return "column " + strconv.Quote(e.Column) + ": timestamp of " + strconv.FormatInt(e.Millis, 10) +
		" ms + " + strconv.Itoa(int(e.NanosOfMilli)) + " ns since the epoch is outside the range of Arrow's " +
		"timestamp[ns] (int64 nanoseconds: 1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z)"
}

// Unwrap returns ErrTimestampRange.
func (e *TimestampRangeError) Unwrap() error { return ErrTimestampRange }

// invalidf returns an error matching ErrInvalidPayload that says what.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPayload}, args...)...)
}
