package kvstore

import (
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/kvstore/kverr"
)

// The store's sentinel errors, declared in package kverr (documented there)
// so that mapping them does not link Badger.
var (
	ErrInvalidConfig  = kverr.ErrInvalidConfig
	ErrClosed         = kverr.ErrClosed
	ErrStaleOffset    = kverr.ErrStaleOffset
	ErrInvalidChange  = kverr.ErrInvalidChange
	ErrBatchTooLarge  = kverr.ErrBatchTooLarge
	ErrAnswerTooLarge = kverr.ErrAnswerTooLarge
	ErrCorrupt        = kverr.ErrCorrupt
	ErrStoreOpen      = kverr.ErrStoreOpen
	ErrInvalidUpdate  = kverr.ErrInvalidUpdate
	ErrDeleteDisabled = kverr.ErrDeleteDisabled
	ErrInvalidScan    = kverr.ErrInvalidScan
)

// ErrCloseTimeout: DB.Close gave up waiting for Badger (Config.CloseTimeout).
// Only a stopping node sees it, so it has no wire code.
var ErrCloseTimeout = pkgerr.New("kvstore", "close timed out")
