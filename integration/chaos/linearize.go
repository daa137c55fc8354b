package chaos

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// partitionBy splits a history by a key of each operation's input: the
// models here are registers per key, checked independently.
func partitionBy[K comparable](key func(input any) K) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[K][]porcupine.Operation{}
		for _, op := range history {
			k := key(op.Input)
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	}
}

// checkLinearizable runs porcupine over ops and records the answer in res.
func checkLinearizable(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration, res *KVResult) {
	switch r, _ := porcupine.CheckOperationsVerbose(model, ops, timeout); r {
	case porcupine.Ok:
		res.Linearizable = true
	case porcupine.Unknown:
		res.Unknown = true
	}
}
