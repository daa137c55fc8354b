package replication

import "fmt"

// InvariantError is the panic value of a broken invariant.
type InvariantError struct{ Msg string }

func (e *InvariantError) Error() string { return "replication: invariant broken: " + e.Msg }

// assertf panics with an InvariantError when ok is false.
func assertf(ok bool, format string, args ...any) {
	if !ok {
		panic(&InvariantError{Msg: fmt.Sprintf(format, args...)})
	}
}
