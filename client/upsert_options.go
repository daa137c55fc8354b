package client

import (
	"log/slog"
	"time"

	"github.com/floedb/floe/storage/record"
)

// UpsertWriterOptions configure an UpsertWriter. The zero value is usable:
// full-row upserts with the AppendWriter's defaults.
type UpsertWriterOptions struct {
	// Acks says when a batch counts as written. Default AcksAll.
	Acks Acks
	// BatchBytes bounds a batch: header and uncompressed records. Default
	// 256 KiB.
	BatchBytes int
	// Linger is how long a batch that is not full waits for more rows,
	// counted from its first row, as in AppendWriterOptions: by default 5
	// ms while the bucket has batches in flight and none when it has none;
	// negative: send at once.
	Linger time.Duration
	// MaxBufferedBytes bounds the rows a writer holds: Upsert and Delete
	// block while one more row would exceed it. At least BatchBytes.
	// Default 32 MiB.
	MaxBufferedBytes int64
	// Compression of batch payloads. Default none.
	Compression record.Compression
	// DeliveryTimeout bounds how long a batch may take, counted from its
	// first row, retries included; then its rows fail with
	// ErrDeliveryTimeout. Default 2 min.
	DeliveryTimeout time.Duration
	// RequestTimeout bounds one PutKv call. Default 10 s.
	RequestTimeout time.Duration
	// MaxInFlight is how many batches of a bucket may be on their way at
	// once, as in AppendWriterOptions. Default 5.
	MaxInFlight int
	// PartialColumns makes the writer's upserts partial updates: they set
	// these columns (and the primary-key columns, always set) and leave the
	// others of an existing row as they are. The rows' other columns must
	// be null, even NOT NULL ones. Empty: upserts replace whole rows.
	PartialColumns []string
	// Logger receives the writer's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field. PartialColumns are checked
// against the table's schema by NewUpsertWriter.
func (o *UpsertWriterOptions) Validate() error {
	c := o.common()
	return c.validate(upsertWriterName)
}

// upsertWriterName is the UpsertWriter in messages.
const upsertWriterName = "upsert writer"

// common returns the options the writer machinery takes.
func (o *UpsertWriterOptions) common() AppendWriterOptions {
	return AppendWriterOptions{Acks: o.Acks, BatchBytes: o.BatchBytes, Linger: o.Linger,
		MaxBufferedBytes: o.MaxBufferedBytes, Compression: o.Compression, DeliveryTimeout: o.DeliveryTimeout,
		RequestTimeout: o.RequestTimeout, MaxInFlight: o.MaxInFlight, Logger: o.Logger}
}
