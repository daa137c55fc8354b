package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// benchSchema is the schema of tables the benchmarks create.
const benchSchema = "id BIGINT NOT NULL, payload BYTES"

// benchDrainTimeout bounds the wait for acknowledgements (and, in e2e, for
// the scanner) after --duration.
const benchDrainTimeout = 30 * time.Second

// benchCmds are the benchmarks of floe bench.
func benchCmds(env *cliEnv) []clientCmd {
	return []clientCmd{benchProduceCmd(env), benchE2ECmd(env), benchUpsertCmd(env), benchLookupCmd(env), benchSuiteCmd(env)}
}

// benchFlags are the flags both benchmarks take.
type benchFlags struct {
	table       string
	duration    time.Duration
	concurrency int
	recordBytes int
	acks        string
	buckets     int
	linger      time.Duration
	maxInFlight int
	cpuProfile  string
	nodePIDs    string

	ackMode client.Acks // parsed from acks
	pids    []int       // parsed from nodePIDs
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	f.registerAs(fs, "bench.records", "DB.TABLE to write; created with '"+benchSchema+"' if missing")
}

// registerAs registers the flags with the given default table.
func (f *benchFlags) registerAs(fs *flag.FlagSet, table, tableUsage string) {
	fs.StringVar(&f.table, "table", table, tableUsage)
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to write")
	fs.IntVar(&f.concurrency, "concurrency", 1, "writer goroutines, each with its own writer")
	fs.IntVar(&f.recordBytes, "record-bytes", 1024, "payload bytes per record")
	choiceVar(fs, &f.acks, "acks", "all", ackChoices, "acknowledgement: all, 1 or 0")
	fs.IntVar(&f.buckets, "buckets", 0, "buckets of a table created by the benchmark (0: the cluster's default)")
	fs.DurationVar(&f.linger, "linger", 0, "writer linger (0: the writer's default, negative: none)")
	fs.IntVar(&f.maxInFlight, "max-in-flight", 0, fmt.Sprintf("batches of a bucket a writer has on their way at once, 1 to %d (0: the writer's default, %d)",
		client.MaxInFlightLimit, client.DefaultMaxInFlight))
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this client to the file (go tool pprof)")
	fs.StringVar(&f.nodePIDs, "node-pids", "", "comma-separated process ids of the nodes, when they run on this machine: report their CPU time per operation beside the client's (the peer kit's server_cpu_us_per_op)")
}

// appendOptions are the options of the benchmark's append writers.
func (f *benchFlags) appendOptions() client.AppendWriterOptions {
	return client.AppendWriterOptions{Acks: f.ackMode, Linger: f.linger, MaxInFlight: f.maxInFlight}
}

// upsertOptions are the options of the benchmark's upsert writers.
func (f *benchFlags) upsertOptions() client.UpsertWriterOptions {
	return client.UpsertWriterOptions{Acks: f.ackMode, Linger: f.linger, MaxInFlight: f.maxInFlight}
}

// startProfile starts the --cpuprofile profile, if asked; the returned
// function stops it.
func (f *benchFlags) startProfile() (func(), error) {
	if f.cpuProfile == "" {
		return func() {}, nil
	}
	out, err := os.Create(f.cpuProfile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}

func (f *benchFlags) validate() error {
	var err error
	if f.ackMode, err = client.ParseAcks(f.acks); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if f.pids, err = parseNodePIDs(f.nodePIDs); err != nil {
		return err
	}
	switch {
	case f.duration <= 0:
		return fmt.Errorf("%w: --duration must be positive", errUsage)
	case f.concurrency <= 0 || f.concurrency > 10000:
		return fmt.Errorf("%w: --concurrency must be in [1, 10000]", errUsage)
	case f.recordBytes < 0 || f.recordBytes > 64<<20:
		return fmt.Errorf("%w: --record-bytes must be in [0, 64 MiB]", errUsage)
	case f.buckets < 0:
		return fmt.Errorf("%w: --buckets must not be negative", errUsage)
	case f.maxInFlight < 0 || f.maxInFlight > client.MaxInFlightLimit:
		return fmt.Errorf("%w: --max-in-flight must be in [1, %d] (0: the default)", errUsage, client.MaxInFlightLimit)
	}
	return nil
}

// openBenchTable creates the database and table if missing, and opens the
// table, which must have the benchmark's columns.
func openBenchTable(ctx context.Context, c *client.Client, cf *clientFlags, f *benchFlags) (*client.Table, error) {
	tbl, err := ensureBenchTable(ctx, c, cf, f.table, client.TableSpec{Schema: benchSchema, Buckets: int32(f.buckets)})
	if err != nil {
		return nil, err
	}
	cols := tbl.Schema().Columns
	if len(cols) < 2 || cols[0].Type.Kind() != record.KindBigInt || cols[1].Type.Kind() != record.KindBytes {
		return nil, fmt.Errorf("table %s exists with schema %q, want %q first", f.table, tbl.Schema().String(), benchSchema)
	}
	return tbl, nil
}

// ensureBenchTable creates table (DB.TABLE) with spec, and its database,
// if missing, and opens it; callers check the schema of a table that
// already existed.
func ensureBenchTable(ctx context.Context, c *client.Client, cf *clientFlags, table string, spec client.TableSpec) (*client.Table, error) {
	db, name, err := tableName(table)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
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
}

func newBenchRows(tbl *client.Table, payloadBytes int) *benchRows {
	p := make([]byte, payloadBytes)
	_, _ = rand.Read(p)
	return &benchRows{enc: tbl.NewRowEncoder(), payload: p}
}

// next encodes row id; the result is valid until the next call.
func (r *benchRows) next(id int64) ([]byte, error) {
	r.enc.SetInt64(0, id)
	r.enc.SetBytes(1, r.payload)
	row, err := r.enc.Finish(r.row[:0])
	r.row = row
	return row, err
}
