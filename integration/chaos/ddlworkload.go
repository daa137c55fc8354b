package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// DDLWorkload has clients create, drop and describe tables of a few names
// in one database; the history must be linearizable per name: a create
// succeeds only where the table does not exist, a drop only where it
// does, a describe sees what the last of them left.
type DDLWorkload struct {
	Database string
	Clients  int
	Names    int
	Seed     uint64

	cl        *client.Client
	mu        sync.Mutex
	ops       []porcupine.Operation
	pending   []pendingDDL // failed creates and drops, their outcome unknown
	attempted atomic.Int64
	failed    atomic.Int64
	errors    map[string]int
}

// pendingDDL is a create or drop whose outcome the run did not learn.
type pendingDDL struct {
	client    int
	op        ddlOp
	call      int64
	requestID []byte
}

type ddlKind int

const (
	ddlCreate ddlKind = iota
	ddlDrop
	ddlDescribe
)

type ddlOp struct {
	Kind ddlKind
	Name int
}

// ddlOutcome is what a DDL call answered.
type ddlOutcome int

const (
	outcomeOK      ddlOutcome = iota // created, dropped, or described: exists
	outcomeRefused                   // create: exists already; drop or describe: no such table
	outcomeUnknown                   // it may or may not have happened
	outcomeNoop                      // refused for another reason (too few live nodes): nothing happened
)

var ddlModel = porcupine.Model{
	Partition: partitionBy(func(in any) int { return in.(ddlOp).Name }),
	Init:      func() any { return false },
	Step: func(state, input, output any) (bool, any) {
		exists, in, out := state.(bool), input.(ddlOp), output.(ddlOutcome)
		if out == outcomeNoop {
			return true, exists
		}
		switch in.Kind {
		case ddlCreate:
			switch out {
			case outcomeOK:
				return !exists, true
			case outcomeRefused:
				return exists, exists
			}
			return true, true // an unknown create ends with the table there, whoever made it
		case ddlDrop:
			switch out {
			case outcomeOK:
				return exists, false
			case outcomeRefused:
				return !exists, exists
			}
			return true, false
		}
		return (out == outcomeOK) == exists, exists
	},
	DescribeOperation: func(input, output any) string {
		in := input.(ddlOp)
		return fmt.Sprintf("%v(t%d) -> %v", []string{"create", "drop", "describe"}[in.Kind], in.Name, output)
	},
}

// Setup creates the database.
func (w *DDLWorkload) Setup(ctx context.Context, cl *client.Client) error {
	w.cl = cl
	return cl.Admin().CreateDatabase(ctx, w.Database, client.IfNotExists())
}

// Run runs the clients until ctx ends.
func (w *DDLWorkload) Run(ctx context.Context, h *History) error {
	var wg sync.WaitGroup
	for i := range w.Clients {
		wg.Go(func() { w.client(ctx, h, 100+i) })
	}
	wg.Wait()
	return nil
}

func (w *DDLWorkload) client(ctx context.Context, h *History, id int) {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(id)))
	admin := w.cl.Admin()
	for ctx.Err() == nil {
		in := ddlOp{Kind: ddlKind(rng.IntN(3)), Name: rng.IntN(w.Names)}
		start := h.Since()
		w.attempted.Add(1)
		requestID := fmt.Appendf(nil, "chaos-ddl-%d-%d-%d", w.Seed, id, rng.Uint64())
		opCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := w.do(opCtx, admin, in, requestID)
		cancel()
		h.Op(id, fmt.Sprintf("%v t%d", in.Kind, in.Name), start, err)
		out, ok := outcomeOf(in, err)
		if !ok {
			w.failed.Add(1)
			w.mu.Lock()
			if w.errors == nil {
				w.errors = map[string]int{}
			}
			w.errors[transport.CodeName(wireCode(err))]++
			w.mu.Unlock()
			if in.Kind != ddlDescribe { // a failed read tells nothing
				w.mu.Lock()
				w.pending = append(w.pending, pendingDDL{client: id, op: in, call: start.Nanoseconds(), requestID: requestID})
				w.mu.Unlock()
			}
			pause(ctx, time.Duration(rng.IntN(50))*time.Millisecond)
			continue
		}
		ret := h.Since().Nanoseconds()
		w.mu.Lock()
		w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: in, Output: out, Call: start.Nanoseconds(), Return: ret})
		w.mu.Unlock()
		pause(ctx, time.Duration(rng.IntN(50))*time.Millisecond)
	}
}

// do runs one operation with the request id given (creates and drops).
func (w *DDLWorkload) do(ctx context.Context, admin *client.Admin, in ddlOp, requestID []byte) error {
	name := fmt.Sprintf("t%d", in.Name)
	switch in.Kind {
	case ddlCreate:
		_, err := admin.CreateTable(ctx, client.TableSpec{Database: w.Database, Name: name,
			Schema: "id BIGINT NOT NULL", Buckets: 1, Replication: 3}, client.RequestID(requestID))
		return err
	case ddlDrop:
		return admin.DropTable(ctx, w.Database, name, client.RequestID(requestID))
	}
	_, err := admin.DescribeTable(ctx, w.Database, name)
	return err
}

// outcomeOf reads a call's answer; ok is false when it says nothing of
// what happened.
func outcomeOf(in ddlOp, err error) (ddlOutcome, bool) {
	switch {
	case err == nil:
		return outcomeOK, true
	case errors.Is(err, transport.ErrAlreadyExists) && in.Kind == ddlCreate,
		errors.Is(err, transport.ErrUnknownTable) && in.Kind != ddlCreate:
		return outcomeRefused, true
	case errors.Is(err, transport.ErrNotEnoughReplicas) && in.Kind == ddlCreate:
		// The state machine refused it: too few live tablet nodes for
		// its replicas. Nothing was applied.
		return outcomeNoop, true
	}
	return outcomeUnknown, false
}

// Resolve learns the outcome of every create and drop whose call failed,
// once the cluster is healthy again: it sends each again with its request
// id, which the metadata answers with the first attempt's result if that
// was applied, or applies now. Either way the operation took effect
// between its call and this answer, which is what the history records.
func (w *DDLWorkload) Resolve(ctx context.Context, h *History) {
	w.mu.Lock()
	pending := w.pending
	w.pending = nil
	w.mu.Unlock()
	admin := w.cl.Admin()
	for _, p := range pending {
		opCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := w.do(opCtx, admin, p.op, p.requestID)
		cancel()
		out, ok := outcomeOf(p.op, err)
		ret := h.Since().Nanoseconds()
		if !ok {
			out, ret = outcomeUnknown, infinity // still unknown: it may or may not have happened
		}
		w.mu.Lock()
		w.ops = append(w.ops, porcupine.Operation{ClientId: p.client, Input: p.op, Output: out, Call: p.call, Return: ret})
		w.mu.Unlock()
	}
}

// Check runs porcupine over the history.
func (w *DDLWorkload) Check(timeout time.Duration) KVResult {
	w.mu.Lock()
	ops := append([]porcupine.Operation(nil), w.ops...)
	w.mu.Unlock()
	res := newKVResult(w.attempted.Load(), w.failed.Load(), len(ops))
	res.Errors = w.errors
	checkLinearizable(ddlModel, ops, timeout, &res)
	return res
}

// wireCode is the error's wire code (INTERNAL for one without).
func wireCode(err error) pb.ErrorCode {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return pb.ErrorCode_ERROR_CODE_INTERNAL
}
