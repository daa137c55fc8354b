package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// LogSchema is the schema of the log tables the benchmarks create.
const LogSchema = "id BIGINT NOT NULL, payload BYTES"

// benchDrainTimeout bounds the wait for acknowledgements (and, in e2e, for
// the scanner) after --duration.
const benchDrainTimeout = 30 * time.Second

// Options are what every load benchmark (produce, e2e, upsert, lookup)
// takes: the table, how long and how many callers, and how its writers
// send.
type Options struct {
	// Table is DB.TABLE, created with the benchmark's schema if missing.
	Table string
	// Duration is how long the callers run.
	Duration time.Duration
	// Concurrency is the number of callers (goroutines).
	Concurrency int
	// RecordBytes is the payload (value) size of each record or row.
	RecordBytes int
	// Acks is the writers' acknowledgement level.
	Acks client.Acks
	// Buckets and Replication are those of a table the benchmark creates
	// (0: the cluster's default).
	Buckets int
	// Linger and MaxInFlight are the writers' (0: the writer's default).
	Linger      time.Duration
	MaxInFlight int
	// NodePIDs are the process ids of nodes on this machine whose CPU
	// time is reported per operation (see ParseNodePIDs).
	NodePIDs []int
	// LogFormat is the log.format of a log table the benchmark creates
	// ("": the cluster's default).
	LogFormat string
	// Partitions, when above 0, makes the table the benchmark creates
	// partitioned by a third column, part (PartitionedLogSchema), and
	// spreads the rows evenly over that many hourly partitions
	// (2026-12-03T00, T01, ...), created by the writers as they meet them.
	Partitions int
	// Unpartitioned, with Partitions, writes the same rows (their part
	// column included) into a table that is not partitioned: the baseline
	// of what partitions cost a writer.
	Unpartitioned bool
}

// PartitionedLogSchema is the schema of the partitioned log tables the
// benchmarks create (--partitions): LogSchema, then the partition column.
const PartitionedLogSchema = LogSchema + ", part STRING NOT NULL"

// maxBenchPartitions bounds --partitions.
const maxBenchPartitions = 1000

// appendOptions are the options of the benchmark's append writers.
func (f *Options) appendOptions() client.AppendWriterOptions {
	return client.AppendWriterOptions{Acks: f.Acks, Linger: f.Linger, MaxInFlight: f.MaxInFlight}
}

// upsertOptions are the options of the benchmark's upsert writers.
func (f *Options) upsertOptions() client.UpsertWriterOptions {
	return client.UpsertWriterOptions{Acks: f.Acks, Linger: f.Linger, MaxInFlight: f.MaxInFlight}
}

// OpenLogTable creates o.Table and its database if missing, each call
// within timeout, and opens the table, which must have LogSchema's columns
// first.
func OpenLogTable(ctx context.Context, c *client.Client, o *Options, timeout time.Duration) (*client.Table, error) {
	f := o
	spec := client.TableSpec{Schema: LogSchema, Buckets: int32(f.Buckets)}
	if f.LogFormat != "" {
		spec.Properties = map[string]string{"log.format": f.LogFormat}
	}
	if f.Partitions > maxBenchPartitions {
		return nil, fmt.Errorf("--partitions %d: at most %d", f.Partitions, maxBenchPartitions)
	}
	if f.Partitions > 0 {
		spec.Schema = PartitionedLogSchema
		if !f.Unpartitioned {
			spec.PartitionKeys = []string{"part"}
		}
	}
	tbl, err := ensureBenchTable(ctx, c, timeout, f.Table, spec)
	if err != nil {
		return nil, err
	}
	cols := tbl.Schema().Columns
	if len(cols) < 2 || cols[0].Type.Kind() != record.KindBigInt || cols[1].Type.Kind() != record.KindBytes {
		return nil, fmt.Errorf("table %s exists with schema %q, want %q first", f.Table, tbl.Schema().String(), LogSchema)
	}
	if (f.Partitions > 0 && !f.Unpartitioned) != tbl.Partitioned() {
		return nil, fmt.Errorf("table %s exists, partitioned by %v: --partitions %d needs a table of its own (--table)", f.Table, tbl.PartitionKeys(), f.Partitions)
	}
	if f.Partitions > 0 && (len(cols) < 3 || cols[2].Type.Kind() != record.KindString) {
		return nil, fmt.Errorf("table %s exists with schema %q, want %q first", f.Table, tbl.Schema().String(), PartitionedLogSchema)
	}
	return tbl, nil
}

// ensureBenchTable creates table (DB.TABLE) with spec, and its database,
// if missing, and opens it; callers check the schema of a table that
// already existed.
func ensureBenchTable(ctx context.Context, c *client.Client, timeout time.Duration, table string, spec client.TableSpec) (*client.Table, error) {
	db, name, err := client.SplitTableName(table)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Admin().CreateDatabase(ctx, db, client.IfNotExists()); err != nil {
		return nil, err
	}
	spec.Database, spec.Name = db, name
	if _, err := c.Admin().CreateTable(ctx, spec, client.IfNotExists()); err != nil {
		return nil, err
	}
	return c.Table(ctx, db, name)
}

// benchRows encodes rows (id, payload) with a random payload whose first 8
// bytes the caller may overwrite. Not safe for concurrent use.
type benchRows struct {
	enc     *record.RowEncoder
	payload []byte
	row     []byte
	parts   []string // partition values, by id modulo their count; nil: none
}

func newBenchRows(tbl *client.Table, payloadBytes int, partitions int) *benchRows {
	p := make([]byte, payloadBytes)
	_, _ = rand.Read(p)
	r := &benchRows{enc: tbl.NewRowEncoder(), payload: p}
	if partitions > 0 {
		base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
		for h := range max(partitions, 1) {
			r.parts = append(r.parts, base.Add(time.Duration(h)*time.Hour).Format("2006-01-02T15"))
		}
	}
	return r
}

// next encodes row id; the result is valid until the next call.
func (r *benchRows) next(id int64) ([]byte, error) {
	r.enc.SetInt64(0, id)
	r.enc.SetBytes(1, r.payload)
	if r.parts != nil {
		r.enc.SetString(2, r.parts[uint64(id)%uint64(len(r.parts))])
	}
	row, err := r.enc.Finish(r.row[:0])
	r.row = row
	return row, err
}
