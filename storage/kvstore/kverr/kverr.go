// Package kverr holds the sentinel errors of package kvstore, apart from the
// store itself: code that only maps them (the tablet's table of storage
// errors to wire codes) then needs neither the store nor Badger. kvstore
// re-exports each one under the same name.
package kverr

import "github.com/floedb/floe/internal/pkgerr"

var (
	// ErrInvalidConfig marks a Config that Validate rejects.
	ErrInvalidConfig = pkgerr.New("kvstore", "invalid config")
	// ErrClosed is returned by calls on a closed Store.
	ErrClosed = pkgerr.New("kvstore", "store closed")
	// ErrStaleOffset is returned by Apply when the batch does not move the
	// applied offset forward.
	ErrStaleOffset = pkgerr.New("kvstore", "offset already applied")
	// ErrInvalidChange marks a changelog entry Apply cannot write.
	ErrInvalidChange = pkgerr.New("kvstore", "invalid change")
	// ErrBatchTooLarge is returned by Apply when a batch does not fit one
	// Badger transaction; callers split batches at record-batch boundaries.
	ErrBatchTooLarge = pkgerr.New("kvstore", "apply batch too large")
	// ErrAnswerTooLarge is returned by a read whose rows pass the byte
	// bound it was given.
	ErrAnswerTooLarge = pkgerr.New("kvstore", "answer too large")
	// ErrCorrupt marks stored bytes that cannot be decoded.
	ErrCorrupt = pkgerr.New("kvstore", "corrupt data")
	// ErrStoreOpen is returned when a bucket's store is opened twice, or
	// dropped while open.
	ErrStoreOpen = pkgerr.New("kvstore", "store is open")

	// ErrInvalidUpdate marks an Update that Merge cannot apply: a row that
	// does not validate, a null key or version column, a bad column index.
	ErrInvalidUpdate = pkgerr.New("kvstore", "invalid update")
	// ErrDeleteDisabled is returned by Merge for a delete when the table's
	// delete behavior is DeleteDisable.
	ErrDeleteDisabled = pkgerr.New("kvstore", "deletes are disabled for this table")
	// ErrInvalidScan refuses a page request no scan can serve: a resume
	// key longer than any store key, or limits that are not positive.
	ErrInvalidScan = pkgerr.New("kvstore", "invalid scan")
)
