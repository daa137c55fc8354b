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
	// ErrInvalidData: a data file whose contents are not what Floe wrote
	// (a value out of its column's range, a column of the wrong type).
	ErrInvalidData = errors.New("lake: invalid data file")
	// ErrNotInLake: the offset a read asked for is not in the lake's
	// version (below its first file of the bucket, or at or past the
	// offset the version covers).
	ErrNotInLake = errors.New("lake: offset not in the lake")
)
