package client

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

// Defaults of the zero AppendWriterOptions.
const (
	DefaultBatchBytes       = 256 << 10
	DefaultLinger           = 5 * time.Millisecond
	DefaultMaxBufferedBytes = 32 << 20
	DefaultDeliveryTimeout  = 2 * time.Minute
	DefaultRequestTimeout   = 10 * time.Second
	// DefaultMaxInFlight batches of a bucket are sent before the first is
	// answered; MaxInFlightLimit is the most a writer may have, the
	// number of batches a bucket remembers per writer to answer retries.
	DefaultMaxInFlight = 5
	MaxInFlightLimit   = 5
)

// Acks says when the server acknowledges a batch.
type Acks int8

const (
	// AcksAll (the default): once every in-sync replica has the batch
	// durably. Refused, retriably, while fewer replicas than the table's
	// minimum are in sync.
	AcksAll Acks = iota
	// AcksLeader: once the leader has the batch durably.
	AcksLeader
	// AcksNone: the leader answers before appending. Nothing is known of
	// the outcome; the results' offsets are what the server reports.
	AcksNone
)

// wire is the produce request's acks field: -1, 1 or 0.
func (a Acks) wire() int32 {
	switch a {
	case AcksLeader:
		return 1
	case AcksNone:
		return 0
	default:
		return -1
	}
}

// String returns "all", "1" or "0", as ParseAcks reads.
func (a Acks) String() string {
	switch a {
	case AcksAll:
		return "all"
	case AcksLeader:
		return "1"
	case AcksNone:
		return "0"
	default:
		return fmt.Sprintf("acks(%d)", int8(a))
	}
}

// ParseAcks reads "all" (or "-1"), "1" (or "leader") and "0" (or "none").
func ParseAcks(s string) (Acks, error) {
	switch s {
	case "all", "-1":
		return AcksAll, nil
	case "1", "leader":
		return AcksLeader, nil
	case "0", "none":
		return AcksNone, nil
	}
	return 0, pkgerr.Errorf("client", "acks %q: want all, 1 or 0", s)
}

// AppendWriterOptions configure an AppendWriter. The zero value is usable.
type AppendWriterOptions struct {
	// Acks says when a batch counts as written. Default AcksAll.
	Acks Acks
	// BatchBytes bounds a batch: header and uncompressed records. A row
	// too large for a batch of this size is sent in a batch of its own.
	// Default 256 KiB.
	BatchBytes int
	// Linger is how long a batch that is not full waits for more rows
	// before it is sent, counted from its first row. Default (0): 5 ms
	// while the bucket has batches in flight, none when it has none, so a
	// lone row goes at once and rows that come while batches are on their
	// way gather into the next; and past the 5 ms a batch that is not full
	// waits for the answer to the bucket's last batch that went out before
	// it was full, so under load batches grow with the round trip instead
	// of multiplying (rows spread over many partitions or buckets). A
	// positive value is always waited, and only it (the batch may fill
	// meanwhile); a negative one sends at once.
	Linger time.Duration
	// MaxBufferedBytes bounds the rows a writer holds (appended and not
	// yet acknowledged or failed): Append blocks while one more row would
	// exceed it. At least BatchBytes. Default 32 MiB.
	MaxBufferedBytes int64
	// Compression of row batch payloads. Default none. A table in the
	// arrow log format (its log.format) compresses the way its
	// log.compression and log.compression.level say instead.
	Compression record.Compression
	// DeliveryTimeout bounds how long a batch may take, counted from its
	// first row's Append, retries included; then its rows fail with
	// ErrDeliveryTimeout. Default 2 min.
	DeliveryTimeout time.Duration
	// RequestTimeout bounds one produce call, and is what the server may
	// wait for acks=all. Default 10 s.
	RequestTimeout time.Duration
	// MaxInFlight is how many batches of a bucket may be on their way at
	// once, sent and not yet answered: they are sent in sequence on one
	// stream per node and decided in that order, and retries keep it
	// (docs/replication.md, Writers). 1 to MaxInFlightLimit (5); default
	// 5.
	MaxInFlight int
	// Logger receives the writer's messages; nil discards them.
	Logger *slog.Logger

	// lingerIdle: Linger was left at its default, which a bucket with
	// nothing in flight does not wait (set by withDefaults).
	lingerIdle bool
}

// Validate reports the first invalid field.
func (o *AppendWriterOptions) Validate() error { return o.validate("append writer") }

// validate checks the options of the writer named name (in messages).
func (o *AppendWriterOptions) validate(name string) error {
	switch {
	case o.Acks < AcksAll || o.Acks > AcksNone:
		return pkgerr.Errorf("client", "%s: unknown %v", name, o.Acks)
	case o.BatchBytes < 0 || o.BatchBytes > record.MaxBatchSize:
		return pkgerr.Errorf("client", "%s: BatchBytes %d not in [0, %d]", name, o.BatchBytes, record.MaxBatchSize)
	case o.BatchBytes > 0 && o.BatchBytes < 2*record.HeaderSize:
		return pkgerr.Errorf("client", "%s: BatchBytes %d is below %d", name, o.BatchBytes, 2*record.HeaderSize)
	case o.MaxBufferedBytes < 0:
		return pkgerr.Errorf("client", "%s: negative MaxBufferedBytes", name)
	case o.DeliveryTimeout < 0 || o.RequestTimeout < 0:
		return pkgerr.Errorf("client", "%s: negative DeliveryTimeout or RequestTimeout", name)
	case o.MaxInFlight < 0 || o.MaxInFlight > MaxInFlightLimit:
		return pkgerr.Errorf("client", "%s: MaxInFlight %d not in [1, %d] (0: the default, %d)", name, o.MaxInFlight,
			MaxInFlightLimit, DefaultMaxInFlight)
	case o.Compression != record.CompressionNone && o.Compression != record.CompressionZstd:
		return pkgerr.Errorf("client", "%s: unknown %v", name, o.Compression)
	}
	d := o.withDefaults()
	if d.MaxBufferedBytes < int64(d.BatchBytes) {
		return pkgerr.Errorf("client", "%s: MaxBufferedBytes %d is below BatchBytes %d", name, d.MaxBufferedBytes, d.BatchBytes)
	}
	return nil
}

func (o AppendWriterOptions) withDefaults() AppendWriterOptions {
	if o.BatchBytes == 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	switch {
	case o.Linger == 0:
		o.Linger, o.lingerIdle = DefaultLinger, true
	case o.Linger < 0:
		o.Linger = 0
	}
	if o.MaxBufferedBytes == 0 {
		o.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if o.DeliveryTimeout == 0 {
		o.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
