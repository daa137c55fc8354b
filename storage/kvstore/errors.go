package kvstore

import "github.com/floedb/floe/storage/kvstore/kverr"

// The store's sentinel errors, declared in package kverr (documented there)
// so that mapping them does not link Badger.
var (
	ErrInvalidConfig  = kverr.ErrInvalidConfig
	ErrClosed         = kverr.ErrClosed
	ErrStaleOffset    = kverr.ErrStaleOffset
	ErrInvalidChange  = kverr.ErrInvalidChange
	ErrBatchTooLarge  = kverr.ErrBatchTooLarge
	ErrCorrupt        = kverr.ErrCorrupt
	ErrStoreOpen      = kverr.ErrStoreOpen
	ErrInvalidUpdate  = kverr.ErrInvalidUpdate
	ErrDeleteDisabled = kverr.ErrDeleteDisabled
	ErrInvalidScan    = kverr.ErrInvalidScan
)
