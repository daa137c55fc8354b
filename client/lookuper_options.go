package client

import (
	"log/slog"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// Defaults and limits of LookuperOptions.
const (
	DefaultMaxBatchKeys  = 256
	DefaultLookupTimeout = 30 * time.Second
	// MaxBatchKeysLimit bounds MaxBatchKeys.
	MaxBatchKeysLimit = 1 << 16
)

// lookupsInFlightPerBucket bounds the Lookup requests a Lookuper has in
// flight to one bucket; keys arriving meanwhile wait for the next one.
const lookupsInFlightPerBucket = 4

// LookuperOptions configure a Lookuper. The zero value is usable.
type LookuperOptions struct {
	// Linearizable makes every answer reflect every write acknowledged
	// before the lookup was sent: the leader answers once a barrier of its
	// own has committed. It costs a replication round trip per request.
	Linearizable bool
	// MaxBatchKeys bounds the keys of one Lookup request: concurrent
	// lookups of a bucket share requests up to this many keys, and
	// LookupBatch splits its keys into requests of at most this many.
	// Default 256, at most MaxBatchKeysLimit.
	MaxBatchKeys int
	// RequestTimeout bounds one call to a server. Default 10 s.
	RequestTimeout time.Duration
	// Timeout bounds one lookup, retries included: retriable errors (a
	// leader moved, a node unreachable) are retried with fresh metadata
	// until it passes or the caller's context ends. Default 30 s.
	Timeout time.Duration
	// Logger receives the lookuper's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (o *LookuperOptions) Validate() error {
	switch {
	case o.MaxBatchKeys < 0 || o.MaxBatchKeys > MaxBatchKeysLimit:
		return pkgerr.Errorf("client", "lookuper: MaxBatchKeys %d not in [0, %d]", o.MaxBatchKeys, MaxBatchKeysLimit)
	case o.RequestTimeout < 0 || o.Timeout < 0:
		return pkgerr.Errorf("client", "lookuper: negative RequestTimeout or Timeout")
	}
	return nil
}

func (o LookuperOptions) withDefaults() LookuperOptions {
	if o.MaxBatchKeys == 0 {
		o.MaxBatchKeys = DefaultMaxBatchKeys
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultLookupTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
