package record

import (
	"fmt"
	"strconv"

	"github.com/floedb/floe/internal/pkgerr"
)

// Sentinel errors of the schema, row and JSON codecs. Errors returned by this
// package wrap one or more of them; match them with errors.Is, never by the
// error text.
var (
	// ErrInvalidSchema marks a schema, type or schema encoding that is not
	// acceptable: bad syntax, bad names, bad type parameters, bad primary key.
	ErrInvalidSchema = pkgerr.New("record", "invalid schema")

	// ErrInvalidRow marks row bytes that do not decode under their schema.
	// For rows read back from storage it means corruption.
	ErrInvalidRow = pkgerr.New("record", "invalid row")

	// ErrInvalidJSON marks JSON input that is not one well-formed object.
	ErrInvalidJSON = pkgerr.New("record", "invalid JSON row")

	// ErrUnknownColumn marks a value given for a column the schema lacks.
	ErrUnknownColumn = pkgerr.New("record", "unknown column")

	// ErrDuplicateColumn marks a column given a value twice in one JSON object.
	ErrDuplicateColumn = pkgerr.New("record", "duplicate column")

	// ErrWrongType marks a value of the wrong type for its column, such as a
	// JSON string for an INT column or a setter that does not fit the column.
	ErrWrongType = pkgerr.New("record", "wrong type")

	// ErrNullNotAllowed marks a null or missing value of a NOT NULL column.
	ErrNullNotAllowed = pkgerr.New("record", "null not allowed")

	// ErrOverflow marks a value outside the range, precision or scale of its
	// column type.
	ErrOverflow = pkgerr.New("record", "value out of range")

	// ErrInvalidUTF8 marks a STRING value that is not valid UTF-8.
	ErrInvalidUTF8 = pkgerr.New("record", "invalid UTF-8")

	// ErrInvalidValue marks a value whose text does not parse as its column
	// type, such as a malformed DATE or base64 string.
	ErrInvalidValue = pkgerr.New("record", "invalid value")
)

// ErrDecompressedTooLarge marks a compressed batch whose payload inflates
// past the codec's limit (CodecConfig.MaxBatchBytes). Errors matching it are
// *LimitError.
var ErrDecompressedTooLarge = pkgerr.New("record", "decompressed batch over the limit")

// LimitError is a compressed batch refused for what it inflates to.
type LimitError struct {
	// Offset is the batch's base offset as its header says.
	Offset int64
	// AtLeastBytes is how large the batch was found to be uncompressed
	// (header included) when decompression stopped: at least this.
	AtLeastBytes int
	// LimitBytes is the codec's limit.
	LimitBytes int
}

// Error returns a message naming the size and the limit.
func (e *LimitError) Error() string { return "record: " + e.UserMessage() }

// UserMessage is Error without the package name (pkgerr.Message).
func (e *LimitError) UserMessage() string {
	return fmt.Sprintf("zstd batch at offset %d inflates to at least %d bytes, over the %d-byte batch limit",
		e.Offset, e.AtLeastBytes, e.LimitBytes)
}

// Unwrap returns ErrDecompressedTooLarge.
func (e *LimitError) Unwrap() error { return ErrDecompressedTooLarge }

// ColumnError is an error about the value of one column. Its Err wraps the
// sentinels that classify it (ErrWrongType, ErrOverflow, ...), so
// errors.Is(err, ErrOverflow) works through a *ColumnError.
type ColumnError struct {
	// Column is the column name as given by the schema or, for
	// ErrUnknownColumn, by the input.
	Column string
	// Path locates the value at fault inside the value of a nested column,
	// step by step: "[3]" for element 3 of an array, ".city" for a field
	// of a row, ".keys[2]" and ".values[2]" for the key and value of map
	// entry 2, and in JSON input `["k"]` for the value of key "k" of a map
	// written as an object. It is empty for the column's own value.
	Path string
	// Err says what is wrong with the value.
	Err error
}

// Error returns a message like `record: column "amount": value 123.456
// exceeds DECIMAL(10,2)` or `record: column "tags"[3]: expected JSON
// string for STRING, got number`.
func (e *ColumnError) Error() string {
	return "record: column " + strconv.Quote(e.Column) + e.Path + ": " + e.Err.Error()
}

// UserMessage is Error without the Go package names (pkgerr.Message).
func (e *ColumnError) UserMessage() string {
	return "column " + strconv.Quote(e.Column) + e.Path + ": " + pkgerr.Message(e.Err)
}

// Unwrap returns e.Err.
func (e *ColumnError) Unwrap() error { return e.Err }

// detailError is a message that matches one or more sentinels without
// repeating their text.
type detailError struct {
	pkg   string // "record", or "" inside a *ColumnError, which names it
	msg   string
	kinds []error
}

func (e *detailError) Error() string {
	if e.pkg == "" {
		return e.msg
	}
	return e.pkg + ": " + e.msg
}

// UserMessage is Error without the package name (pkgerr.Message).
func (e *detailError) UserMessage() string { return e.msg }

func (e *detailError) Unwrap() []error { return e.kinds }

// newColumnError returns a *ColumnError about column name whose message is msg
// and which matches the sentinels in kinds.
func newColumnError(name, msg string, kinds ...error) error {
	return &ColumnError{Column: name, Err: &detailError{msg: msg, kinds: kinds}}
}

// newPathError is newColumnError about the value at path inside column
// name (see ColumnError.Path).
func newPathError(name, path, msg string, kinds ...error) error {
	return &ColumnError{Column: name, Path: path, Err: &detailError{msg: msg, kinds: kinds}}
}

// newRowError returns an error matching ErrInvalidRow, with msg as detail.
func newRowError(msg string) error {
	return &detailError{pkg: "record", msg: "invalid row: " + msg, kinds: []error{ErrInvalidRow}}
}

// newSchemaError returns an error matching ErrInvalidSchema, with msg as
// detail.
func newSchemaError(msg string) error {
	return &detailError{pkg: "record", msg: "schema: " + msg, kinds: []error{ErrInvalidSchema}}
}
