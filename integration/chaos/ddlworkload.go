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
	attempted atomic.Int64
	failed    atomic.Int64
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
)

var ddlModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range history {
			n := op.Input.(ddlOp).Name
			by[n] = append(by[n], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return false },
	Step: func(state, input, output any) (bool, any) {
		exists, in, out := state.(bool), input.(ddlOp), output.(ddlOutcome)
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
		name := fmt.Sprintf("t%d", in.Name)
		start := h.Since()
		w.attempted.Add(1)
		opCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var err error
		switch in.Kind {
		case ddlCreate:
			_, err = admin.CreateTable(opCtx, client.TableSpec{Database: w.Database, Name: name,
				Schema: "id BIGINT NOT NULL", Buckets: 1, Replication: 3})
		case ddlDrop:
			err = admin.DropTable(opCtx, w.Database, name)
		case ddlDescribe:
			_, err = admin.DescribeTable(opCtx, w.Database, name)
		}
		cancel()
		h.Op(id, fmt.Sprintf("%v t%d", in.Kind, in.Name), start, err)
		out, ret := outcomeOK, h.Since().Nanoseconds()
		switch {
		case err == nil:
		case errors.Is(err, transport.ErrAlreadyExists) && in.Kind == ddlCreate,
			errors.Is(err, transport.ErrUnknownTable) && in.Kind != ddlCreate:
			out = outcomeRefused
		default:
			w.failed.Add(1)
			if in.Kind == ddlDescribe {
				continue // a failed read tells nothing
			}
			out, ret = outcomeUnknown, infinity
		}
		w.mu.Lock()
		w.ops = append(w.ops, porcupine.Operation{ClientId: id, Input: in, Output: out, Call: start.Nanoseconds(), Return: ret})
		w.mu.Unlock()
		pause(ctx, time.Duration(rng.IntN(50))*time.Millisecond)
	}
}

// Check runs porcupine over the history.
func (w *DDLWorkload) Check(timeout time.Duration) KVResult {
	w.mu.Lock()
	ops := append([]porcupine.Operation(nil), w.ops...)
	w.mu.Unlock()
	res := KVResult{Attempted: w.attempted.Load(), Operations: int64(len(ops)), Failed: w.failed.Load()}
	switch r, _ := porcupine.CheckOperationsVerbose(ddlModel, ops, timeout); r {
	case porcupine.Ok:
		res.Linearizable = true
	case porcupine.Unknown:
		res.Unknown = true
	}
	return res
}
