package metastate

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestAllocateWriterID(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name      string
		requestID string
		want      uint64
	}{
		{"first", "", 1},
		{"second", "", 2},
		{"with a request id", "w", 3},
		{"the same request id again", "w", 3},
		{"another request id", "v", 4},
		{"no request id again", "", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := allocateWriterID()
			if tc.requestID != "" {
				cmd = withID(tc.requestID, cmd)
			}
			res := h.ok(cmd)
			if res.GetWriterId() != tc.want {
				t.Errorf("writer id %d, want %d", res.GetWriterId(), tc.want)
			}
			if res.GetUnchanged() {
				t.Errorf("unchanged set")
			}
			if u := h.feedAt(h.index); u != nil {
				t.Errorf("feed update %v", u)
			}
		})
	}
	// A retry returns the first result, index included.
	first := h.ok(withID("x", allocateWriterID()))
	if again := h.ok(withID("x", allocateWriterID())); !proto.Equal(again, first) {
		t.Errorf("retry %v, want %v", again, first)
	}
	// The counter is in the file: it survives a reopen.
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(h.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h.s = s
	if got := h.ok(allocateWriterID()).GetWriterId(); got != first.GetWriterId()+1 {
		t.Errorf("after reopen: %d, want %d", got, first.GetWriterId()+1)
	}
}
