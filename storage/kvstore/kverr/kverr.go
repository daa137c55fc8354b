// Package kverr holds the sentinel errors of package kvstore, apart from the
// store itself: code that only maps them (the tablet's table of storage
// errors to wire codes) then needs neither the store nor Badger. kvstore
// re-exports each one under the same name.
package kverr

import "errors"

var (
	// ErrInvalidConfig marks a Config that Validate rejects.
	ErrInvalidConfig = errors.New("kvstore: invalid config")
	// ErrClosed is returned by calls on a closed Store.
	ErrClosed = errors.New("kvstore: store closed")
	// ErrStaleOffset is returned by Apply when the batch does not move the
	// applied offset forward.
	ErrStaleOffset = errors.New("kvstore: offset already applied")
	// ErrInvalidChange marks a changelog entry Apply cannot write.
	ErrInvalidChange = errors.New("kvstore: invalid change")
	// ErrBatchTooLarge is returned by Apply when a batch does not fit one
	// Badger transaction; callers split batches at record-batch boundaries.
	ErrBatchTooLarge = errors.New("kvstore: apply batch too large")
	// ErrAnswerTooLarge is returned by a read whose rows pass the byte
	// bound it was given.
	ErrAnswerTooLarge = errors.New("kvstore: answer too large")
	// ErrCorrupt marks stored bytes that cannot be decoded.
	ErrCorrupt = errors.New("kvstore: corrupt data")
	// ErrStoreOpen is returned when a bucket's store is opened twice, or
	// dropped while open.
	ErrStoreOpen = errors.New("kvstore: store is open")

	// ErrInvalidUpdate marks an Update that Merge cannot apply: a row that
	// does not validate, a null key or version column, a bad column index.
	ErrInvalidUpdate = errors.New("kvstore: invalid update")
	// ErrDeleteDisabled is returned by Merge for a delete when the table's
	// delete behavior is DeleteDisable.
	ErrDeleteDisabled = errors.New("kvstore: deletes are disabled for this table")
	// ErrInvalidScan refuses a page request no scan can serve: a resume
	// key longer than any store key, or limits that are not positive.
	ErrInvalidScan = errors.New("kvstore: invalid scan")
)
