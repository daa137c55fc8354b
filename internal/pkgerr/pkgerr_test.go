package pkgerr

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

var errSentinel = New("store", "closed")

// typed builds its text, opening with its package's name.
type typed struct{ n int }

func (e typed) Error() string       { return "store: " + e.UserMessage() }
func (e typed) UserMessage() string { return fmt.Sprintf("bad value %d", e.n) }

// TestMessage: Error keeps the package names, Message drops those of the
// *Error values and typed errors in the chain, through fmt.Errorf and
// errors.Join, and errors.Is sees through Errorf.
func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		err           error
		text, message string
	}{
		{errSentinel, "store: closed", "closed"},
		{Errorf("client", "write: %w", errSentinel), "client: write: store: closed", "write: closed"},
		{fmt.Errorf("put: %w", Errorf("client", "%w", io.EOF)), "put: client: EOF", "put: EOF"},
		{errors.Join(errSentinel, fmt.Errorf("row 2: %w", typed{7})), "store: closed\nrow 2: store: bad value 7", "closed\nrow 2: bad value 7"},
		{fmt.Errorf("%w and %w", errSentinel, errSentinel), "store: closed and store: closed", "closed and closed"},
		{Errorf("client", "no %v", "wrapping"), "client: no wrapping", "no wrapping"},
		{io.EOF, "EOF", "EOF"},
	} {
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("Error() = %q, want %q", got, tc.text)
		}
		if got := Message(tc.err); got != tc.message {
			t.Errorf("Message(%q) = %q, want %q", tc.err, got, tc.message)
		}
	}
	if err := Errorf("client", "write: %w", errSentinel); !errors.Is(err, errSentinel) {
		t.Errorf("errors.Is(%v, the sentinel) is false", err)
	}
}
