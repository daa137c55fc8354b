package integration

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestCatalogModel checks the checker: histories a correct catalog can
// produce pass, and the ones a lost or doubly applied write produces fail.
func TestCatalogModel(t *testing.T) {
	op := func(client int, in catalogInput, call, ret int64, out catalogOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	create := catalogInput{op: "create", name: "a"}
	drop := catalogInput{op: "drop", name: "a"}
	read := catalogInput{op: "read", name: "a"}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"create then read", []porcupine.Operation{op(0, create, 0, 1, "ok"), op(1, read, 2, 3, "present")}, true},
		{"acknowledged create lost", []porcupine.Operation{op(0, create, 0, 1, "ok"), op(1, read, 2, 3, "absent")}, false},
		{"create applied twice", []porcupine.Operation{op(0, create, 0, 1, "ok"), op(0, create, 2, 3, "ok")}, false},
		{"concurrent creates, one wins", []porcupine.Operation{op(0, create, 0, 3, "ok"), op(1, create, 1, 2, "exists")}, true},
		{"unknown create may apply", []porcupine.Operation{op(0, create, 0, math.MaxInt64, "unknown"), op(1, read, 2, 3, "present")}, true},
		{"unknown create may not apply", []porcupine.Operation{op(0, create, 0, math.MaxInt64, "unknown"), op(1, read, 2, 3, "absent")}, true},
		{"drop of a missing one", []porcupine.Operation{op(0, drop, 0, 1, "missing"), op(0, create, 2, 3, "ok"), op(0, drop, 4, 5, "ok")}, true},
		{"drop acknowledged but still there", []porcupine.Operation{op(0, create, 0, 1, "ok"), op(0, drop, 2, 3, "ok"), op(1, read, 4, 5, "present")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(catalogModel.ToModel(), tc.ops); got != tc.ok {
				t.Fatalf("linearizable = %v, want %v", got, tc.ok)
			}
		})
	}
}
