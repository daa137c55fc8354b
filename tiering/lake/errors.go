package lake

import "errors"

var (
	// ErrUnsupported: a table the lake cannot hold as it is (a type with
	// no Iceberg counterpart, a column name the lake reserves).
	ErrUnsupported = errors.New("lake: unsupported")
	// ErrInvalidMetadata: lake metadata that does not read as Iceberg's
	// (a damaged or foreign file where Floe's should be).
	ErrInvalidMetadata = errors.New("lake: invalid metadata")
	// ErrConflict: the lake table moved on since the version a commit
	// builds on; the committer reads it again and retries.
	ErrConflict = errors.New("lake: commit conflict")
)
