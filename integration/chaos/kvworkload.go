package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// KVWorkload has clients upsert unique values to a few keys (idempotent
// writers, acks=all) and read them with linearizable lookups; the history
// must be linearizable per key (porcupine).
type KVWorkload struct {
	Database, Table string
	Clients, Keys   int
	Seed            uint64

	tbl       *client.Table
	mu        sync.Mutex
	ops       []porcupine.Operation
	attempted atomic.Int64
	failed    atomic.Int64
}

const kvSchema = "id BIGINT NOT NULL, v BIGINT, PRIMARY KEY (id)"

// kvOp is one operation on a key: a put of a unique value or a read.
type kvOp struct {
	Put   bool  `json:"put"`
	Key   int64 `json:"key"`
	Value int64 `json:"value"`
}

// kvModel is a register per key, 0 when absent. A put whose outcome is
// unknown (it failed) may or may not have happened: it is recorded with
// a return time at infinity, as porcupine expects of such operations.
var kvModel = porcupine.Model{
	Partition: partitionBy(func(in any) int64 { return in.(kvOp).Key }),
	Init:      func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvOp)
		if in.Put {
			return true, in.Value
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvOp)
		if in.Put {
			return fmt.Sprintf("put(%d, %d)", in.Key, in.Value)
		}
		return fmt.Sprintf("get(%d) -> %d", in.Key, output)
	},
}

// Setup creates the table (one bucket, replication 3).
func (w *KVWorkload) Setup(ctx context.Context, cl *client.Client) error {
	if err := cl.Admin().CreateDatabase(ctx, w.Database, client.IfNotExists()); err != nil {
		return err
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: w.Database, Name: w.Table, Schema: kvSchema,
		PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3}); err != nil {
		return err
	}
	var err error
	w.tbl, err = cl.Table(ctx, w.Database, w.Table)
	return err
}

// Run runs the clients until ctx ends.
func (w *KVWorkload) Run(ctx context.Context, h *History) error {
	var wg sync.WaitGroup
	errs := make(chan error, w.Clients)
	for i := range w.Clients {
		wg.Go(func() {
			if err := w.client(ctx, h, i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// infinity is the return time of an operation whose outcome is unknown.
const infinity = int64(1) << 62

func (w *KVWorkload) client(ctx context.Context, h *History, id int) error {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(id)))
	uw, err := w.tbl.NewUpsertWriter(client.UpsertWriterOptions{DeliveryTimeout: 20 * time.Second, RequestTimeout: 5 * time.Second, Linger: -1})
	if err != nil {
		return err
	}
	defer uw.Close(context.Background())
	lk, err := w.tbl.NewLookuper(client.LookuperOptions{Linearizable: true})
	if err != nil {
		return err
	}
	defer lk.Close()
	schema := w.tbl.Schema()
	keySchema := w.tbl.PrimaryKeySchema()
	for n := int64(1); ctx.Err() == nil; n++ {
		in := kvOp{Key: rng.Int64N(int64(w.Keys))}
		var out int64
		start := h.Since()
		w.attempted.Add(1)
		opCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		if rng.IntN(2) == 0 {
			in.Put, in.Value = true, int64(id+1)*1_000_000_000+n
			enc := w.tbl.NewRowEncoder()
			enc.SetInt64(0, in.Key)
			enc.SetInt64(1, in.Value)
			row, ferr := enc.Finish(nil)
			if ferr != nil {
				cancel()
				return ferr
			}
			var fut *client.UpsertFuture
			if fut, err = uw.Upsert(opCtx, row); err == nil {
				_, err = fut.Wait(opCtx)
			}
		} else {
			kenc, kerr := record.NewRowEncoder(keySchema)
			if kerr != nil {
				cancel()
				return kerr
			}
			kenc.SetInt64(0, in.Key)
			key, kerr := kenc.Finish(nil)
			if kerr != nil {
				cancel()
				return kerr
			}
			var row []byte
			var found bool
			if row, found, err = lk.Lookup(opCtx, key); err == nil && found {
				out = record.NewRowView(schema, row).Int64(1)
			}
		}
		cancel()
		h.Op(id, fmt.Sprintf("%+v", in), start, err)
		ret := h.Since().Nanoseconds()
		if err != nil {
			w.failed.Add(1)
			if !in.Put {
				continue // a failed read tells nothing
			}
			ret = infinity // a put that may have happened
		}
		w.mu.Lock()
		w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: in, Output: out, Call: start.Nanoseconds(), Return: ret})
		w.mu.Unlock()
	}
	return nil
}

// KVResult is what the linearizability checker found.
type KVResult struct {
	Attempted int64 `json:"attempted"`
	// Acknowledged operations were answered without error.
	Acknowledged int64 `json:"acknowledged"`
	// Operations is how many the linearizability check covered: the
	// acknowledged ones and the writes that failed (which may have
	// happened).
	Operations   int64 `json:"operations"`
	Failed       int64 `json:"failed"`
	Linearizable bool  `json:"linearizable"`
	// Unknown: the checker ran out of time.
	Unknown bool `json:"unknown"`
	// Errors counts the failed calls by error code.
	Errors map[string]int `json:"errors,omitempty"`
}

// newKVResult is the counts of a key or DDL workload.
func newKVResult(attempted, failed int64, checked int) KVResult {
	return KVResult{Attempted: attempted, Acknowledged: attempted - failed, Failed: failed, Operations: int64(checked)}
}

// Check runs porcupine over the history.
func (w *KVWorkload) Check(timeout time.Duration) KVResult {
	w.mu.Lock()
	ops := append([]porcupine.Operation(nil), w.ops...)
	w.mu.Unlock()
	res := newKVResult(w.attempted.Load(), w.failed.Load(), len(ops))
	checkLinearizable(kvModel, ops, timeout, &res)
	return res
}

// Operations returns the recorded history (for a replay file).
func (w *KVWorkload) Operations() []porcupine.Operation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]porcupine.Operation(nil), w.ops...)
}
