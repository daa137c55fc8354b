package gossip

import (
	"context"
	"log/slog"
	"sync"
	"testing"
)

func TestParseMemberlistLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=1.2.3.4:5\n", slog.LevelDebug, "Stream connection from=1.2.3.4:5"},
		{"[INFO] memberlist: Marking 3 as failed\n", slog.LevelInfo, "Marking 3 as failed"},
		{"[WARN] memberlist: Refuting a suspect message\n", slog.LevelWarn, "Refuting a suspect message"},
		{"[ERR] memberlist: Failed push/pull merge: x\n", slog.LevelError, "Failed push/pull merge: x"},
		{"[ERROR] memberlist: Failed to encrypt local state\n", slog.LevelError, "Failed to encrypt local state"},
		{"[ERR] Failed to shutdown transport: x\n", slog.LevelError, "Failed to shutdown transport: x"},
		{"no tag at all\n", slog.LevelDebug, "no tag at all"},
		{"[TRACE] memberlist: odd\n", slog.LevelDebug, "[TRACE] memberlist: odd"},
	} {
		level, msg := parseMemberlistLine([]byte(tc.line))
		if level != tc.level || msg != tc.msg {
			t.Errorf("%q: got %v %q, want %v %q", tc.line, level, msg, tc.level, tc.msg)
		}
	}
}

// recordHandler keeps the records it is given.
type recordHandler struct {
	mu      sync.Mutex
	min     slog.Level
	records []slog.Record
}

func (h *recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestMemberlistLoggerRoutesToSlog(t *testing.T) {
	h := &recordHandler{min: slog.LevelInfo}
	l := newMemberlistLogger(slog.New(h))
	l.Printf("[DEBUG] memberlist: hidden")
	l.Printf("[WARN] memberlist: Refuting %s", "x")
	if len(h.records) != 1 {
		t.Fatalf("got %d records, want 1 (debug filtered out)", len(h.records))
	}
	r := h.records[0]
	var component string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "component" {
			component = a.Value.String()
		}
		return true
	})
	if r.Level != slog.LevelWarn || r.Message != "Refuting x" || component != "memberlist" {
		t.Errorf("got %v %q component %q", r.Level, r.Message, component)
	}
}
