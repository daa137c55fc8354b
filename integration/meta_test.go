package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// catalogInput is one catalog operation in a porcupine history: create or
// drop a database, or read whether it exists.
type catalogInput struct {
	op   string // create, drop, read
	name string
}

// catalogOutput is what the client saw: ok, exists, missing, unknown (the
// call failed without a definite answer), or for read, present/absent.
type catalogOutput string

// catalogModel is a per-name register: does the database exist? An unknown
// outcome may or may not have taken effect.
var catalogModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byName := map[string][]porcupine.Operation{}
		for _, op := range history {
			n := op.Input.(catalogInput).name
			byName[n] = append(byName[n], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byName {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{false} },
	Step: func(state, input, output any) []any {
		exists := state.(bool)
		in, out := input.(catalogInput), output.(catalogOutput)
		switch in.op {
		case "create":
			switch out {
			case "ok":
				if !exists {
					return []any{true}
				}
			case "exists":
				if exists {
					return []any{true}
				}
			case "unknown":
				return []any{exists, true}
			}
		case "drop":
			switch out {
			case "ok":
				if exists {
					return []any{false}
				}
			case "missing":
				if !exists {
					return []any{false}
				}
			case "unknown":
				return []any{exists, false}
			}
		case "read":
			if (out == "present") == exists {
				return []any{exists}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in := input.(catalogInput)
		return fmt.Sprintf("%s(%s) -> %s", in.op, in.name, output)
	},
}

// history records operations with their call and return times.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func (h *history) add(client int, in catalogInput, call, ret time.Time, out catalogOutput) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := ret.Sub(h.start).Nanoseconds()
	if out == "unknown" {
		r = math.MaxInt64 // it may take effect at any time after the call
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out,
		Call: call.Sub(h.start).Nanoseconds(), Return: r})
}

func outcome(err error) catalogOutput {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, transport.ErrAlreadyExists):
		return "exists"
	case errors.Is(err, transport.ErrUnknownDatabase):
		return "missing"
	default:
		return "unknown"
	}
}

// TestMetaDDLWhileLeadersDie runs DDL from several clients while the Raft
// leader is SIGKILLed and restarted, repeatedly. Afterwards the catalog
// operations must be linearizable (so nothing acknowledged is lost and
// nothing is applied twice) and every voter must hold the same catalog.
func TestMetaDDLWhileLeadersDie(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	h := &history{start: time.Now()}
	names := []string{"db0", "db1", "db2", "db3", "db4"}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var acked atomic.Int64
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.Client(ctx)
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				in := catalogInput{op: "create", name: names[rng.IntN(len(names))]}
				if rng.IntN(2) == 0 {
					in.op = "drop"
				}
				opCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				call := time.Now()
				var err error
				if in.op == "create" {
					err = cl.Admin().CreateDatabase(opCtx, in.name)
				} else {
					err = cl.Admin().DropDatabase(opCtx, in.name)
				}
				cancel()
				out := outcome(err)
				if out != "unknown" {
					acked.Add(1)
				}
				h.add(w, in, call, time.Now(), out)
			}
		}()
	}

	for round := range 4 {
		leader := c.WaitLeader(20 * time.Second)
		before := acked.Load()
		waitFor(t, 20*time.Second, "DDL progress", func() bool { return acked.Load() >= before+20 })
		t.Logf("round %d: killing leader node %d", round, leader.ID)
		c.Kill(leader)
		c.WaitLeader(20 * time.Second)
		c.Restart(leader)
	}
	before := acked.Load()
	waitFor(t, 20*time.Second, "DDL progress after the last restart", func() bool { return acked.Load() >= before+20 })
	stop.Store(true)
	wg.Wait()

	// Final reads through the leader join the history.
	cl := c.Client(ctx)
	call := time.Now()
	dbs, err := cl.Admin().ListDatabases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ret := time.Now()
	for _, n := range names {
		out := catalogOutput("absent")
		if slices.ContainsFunc(dbs, func(d client.Database) bool { return d.Name == n }) {
			out = "present"
		}
		h.add(99, catalogInput{op: "read", name: n}, call, ret, out)
	}
	t.Logf("%d operations, %d with a definite answer", len(h.ops), acked.Load())
	res, info := porcupine.CheckOperationsVerbose(catalogModel.ToModel(), h.ops, time.Minute)
	if res != porcupine.Ok {
		for i, p := range info.PartialLinearizations() {
			t.Logf("partition %d: %d partial linearizations", i, len(p))
		}
		t.Fatalf("catalog history is not linearizable (%v)", res)
	}
	checkVotersAgree(t, c, dbs)
}

// checkVotersAgree waits until every node has applied as far as the leader
// and checks each holds exactly want.
func checkVotersAgree(t *testing.T, c *Cluster, want []client.Database) {
	t.Helper()
	ctx := t.Context()
	cl := c.Client(ctx)
	names := func(dbs []client.Database) []string {
		var out []string
		for _, d := range dbs {
			out = append(out, d.Name)
		}
		slices.Sort(out)
		return out
	}
	waitFor(t, 20*time.Second, "all voters to hold the same catalog", func() bool {
		for _, nd := range c.Nodes {
			got, _, err := cl.Admin().LocalDatabases(ctx, nd.Addr)
			if err != nil || !slices.Equal(names(got), names(want)) {
				return false
			}
		}
		return true
	})
}
