package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// kvBenchSchema is the schema of the primary-key tables the upsert and
// lookup benchmarks create: 16-byte keys derived from an index.
const kvBenchSchema = "id STRING NOT NULL, v BYTES"

// kvBenchFlags are the flags of bench upsert and bench lookup.
type kvBenchFlags struct {
	benchFlags
	keys        int64
	batch       int
	replication int
	// sharedWriter (bench upsert): the callers share one writer.
	sharedWriter bool
	// load: upsert every key first (registerLoad).
	load bool
}

func (f *kvBenchFlags) register(fs *flag.FlagSet) {
	f.registerAs(fs, "bench.kv", "DB.TABLE; created with '"+kvBenchSchema+"', PRIMARY KEY (id) if missing")
	fs.Int64Var(&f.keys, "keys", 1_000_000, "keys are drawn at random from [0, keys)")
	fs.IntVar(&f.replication, "replication", 0, "replication of a table created by the benchmark (0: the cluster's default, 3 with 3+ nodes)")
}

func (f *kvBenchFlags) registerLoad(fs *flag.FlagSet) {
	fs.BoolVar(&f.load, "load", false, "first upsert every key of [0, keys) (with --record-bytes values)")
}

// loadIfAsked upserts every key first with --load, reporting the time it
// took to w.
func (f *kvBenchFlags) loadIfAsked(ctx context.Context, w io.Writer, tbl *client.Table) error {
	if !f.load {
		return nil
	}
	start := time.Now()
	if err := loadKeys(ctx, tbl, f); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	fmt.Fprintf(w, "loaded %s in %v\n", plural(f.keys, "key"), time.Since(start).Round(time.Millisecond))
	return nil
}

func (f *kvBenchFlags) validate() error {
	if err := f.benchFlags.validate(); err != nil {
		return err
	}
	switch {
	case f.keys <= 0 || f.keys > 1e15:
		return fmt.Errorf("%w: --keys must be in [1, 1e15]", errUsage)
	case f.batch <= 0 || f.batch > client.MaxBatchKeysLimit:
		return fmt.Errorf("%w: --batch must be in [1, %d]", errUsage, client.MaxBatchKeysLimit)
	case f.replication < 0:
		return fmt.Errorf("%w: --replication must not be negative", errUsage)
	}
	return nil
}

// openKVBenchTable creates the database and table if missing, and opens the
// table, which must have the benchmark's columns and key.
func openKVBenchTable(ctx context.Context, c *client.Client, cf *clientFlags, f *kvBenchFlags) (*client.Table, error) {
	tbl, err := ensureBenchTable(ctx, c, cf, f.table, client.TableSpec{Schema: kvBenchSchema,
		PrimaryKey: []string{"id"}, Buckets: int32(f.buckets), Replication: int32(f.replication)})
	if err != nil {
		return nil, err
	}
	s := tbl.Schema()
	if len(s.Columns) != 2 || s.Columns[0].Type.Kind() != record.KindString || s.Columns[1].Type.Kind() != record.KindBytes ||
		!slices.Equal(s.PrimaryKey, []string{"id"}) {
		return nil, fmt.Errorf("table %s exists with schema %q, want %q with PRIMARY KEY (id)", f.table, s.String(), kvBenchSchema)
	}
	return tbl, nil
}

// kvRows encodes the benchmark's rows and keys. Not safe for concurrent
// use.
type kvRows struct {
	rowEnc, keyEnc *record.RowEncoder
	values         []byte // random bytes; each row takes a window at its own place
	valueBytes     int
	seq            int
	id, row        []byte
}

// valuePoolBytes is the random data values are cut from: every row gets
// different, incompressible bytes without paying for random generation.
const valuePoolBytes = 1 << 20

func newKVRows(tbl *client.Table, valueBytes int) (*kvRows, error) {
	keyEnc, err := record.NewRowEncoder(tbl.PrimaryKeySchema())
	if err != nil {
		return nil, err
	}
	return &kvRows{rowEnc: tbl.NewRowEncoder(), keyEnc: keyEnc, values: benchValues(valueBytes), valueBytes: valueBytes}, nil
}

// valuePools are the random bytes rows are cut from, by value size,
// made once and shared read-only by the callers: 128 callers each
// drawing their own megabyte from crypto/rand took 13% of the benchmark's
// CPU, on the machine the nodes under test share.
var valuePools sync.Map // int → []byte

func benchValues(valueBytes int) []byte {
	if v, ok := valuePools.Load(valueBytes); ok {
		return v.([]byte)
	}
	v := make([]byte, valuePoolBytes+valueBytes)
	_, _ = rand.Read(v)
	got, _ := valuePools.LoadOrStore(valueBytes, v)
	return got.([]byte)
}

// benchKeyID is the 16-byte id of key i.
func benchKeyID(dst []byte, i int64) []byte {
	dst = append(dst, "k000000000000000"...)
	for p := len(dst) - 1; i > 0 && p > len(dst)-16; p-- {
		dst[p] = byte('0' + i%10)
		i /= 10
	}
	return dst
}

// row encodes the row of key i; valid until the next call.
func (r *kvRows) rowOf(i int64) ([]byte, error) {
	r.id = benchKeyID(r.id[:0], i)
	r.rowEnc.SetStringBytes(0, r.id)
	r.seq = (r.seq + 4099) % valuePoolBytes // a prime stride: windows rarely repeat
	r.rowEnc.SetBytes(1, r.values[r.seq:r.seq+r.valueBytes])
	row, err := r.rowEnc.Finish(r.row[:0])
	r.row = row
	return row, err
}

// keyOf encodes the primary key of key i into a new slice.
func (r *kvRows) keyOf(i int64) ([]byte, error) {
	r.id = benchKeyID(r.id[:0], i)
	r.keyEnc.SetStringBytes(0, r.id)
	return r.keyEnc.Finish(nil)
}
