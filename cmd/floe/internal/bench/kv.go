package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// KVSchema is the schema of the primary-key tables the upsert and
// lookup benchmarks create: 16-byte keys derived from an index.
const KVSchema = "id STRING NOT NULL, v BYTES"

// KVOptions are the options of the primary-key benchmarks (upsert,
// lookup).
type KVOptions struct {
	Options
	// Keys: keys are drawn at random from [0, Keys).
	Keys int64
	// Batch is the rows (upsert) or keys (lookup) of one call.
	Batch int
	// Replication is that of a table the benchmark creates (0: the
	// cluster's default).
	Replication int
	// SharedWriter (upsert): the callers share one writer.
	SharedWriter bool
	// Load: every key was upserted first (LoadKeys), so the live data
	// holds all of them.
	Load bool
}

// OpenKVTable creates o.Table and its database if missing, each call
// within timeout, and opens the table, which must have KVSchema's columns
// and key.
func OpenKVTable(ctx context.Context, c *client.Client, o *KVOptions, timeout time.Duration) (*client.Table, error) {
	f := o
	tbl, err := ensureBenchTable(ctx, c, timeout, f.Table, client.TableSpec{Schema: KVSchema,
		PrimaryKey: []string{"id"}, Buckets: int32(f.Buckets), Replication: int32(f.Replication)})
	if err != nil {
		return nil, err
	}
	s := tbl.Schema()
	if len(s.Columns) != 2 || s.Columns[0].Type.Kind() != record.KindString || s.Columns[1].Type.Kind() != record.KindBytes ||
		!slices.Equal(s.PrimaryKey, []string{"id"}) {
		return nil, fmt.Errorf("table %s exists with schema %q, want %q with PRIMARY KEY (id)", f.Table, s.String(), KVSchema)
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
