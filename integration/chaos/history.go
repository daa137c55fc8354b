package chaos

import (
	"sync"
	"time"
)

// Event is one thing that happened in a run: a fault injected or healed,
// or an operation's outcome, with its time since the run started.
type Event struct {
	At     time.Duration `json:"at_ns"`
	Kind   string        `json:"kind"` // "fault", "op"
	What   string        `json:"what"`
	Client int           `json:"client,omitempty"`
	// Operations: when the call started, whether it succeeded.
	Start time.Duration `json:"start_ns,omitempty"`
	OK    bool          `json:"ok,omitempty"`
	Err   string        `json:"err,omitempty"`
}

// History records a run's events; safe for concurrent use.
type History struct {
	start  time.Time
	mu     sync.Mutex
	events []Event
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Since is the time since the run started.
func (h *History) Since() time.Duration { return time.Since(h.start) }

// Fault records a fault (or a heal).
func (h *History) Fault(what string) {
	h.add(Event{At: h.Since(), Kind: "fault", What: what})
}

// Op records an operation that started at start.
func (h *History) Op(client int, what string, start time.Duration, err error) {
	e := Event{At: h.Since(), Kind: "op", What: what, Client: client, Start: start, OK: err == nil}
	if err != nil {
		e.Err = err.Error()
	}
	h.add(e)
}

func (h *History) add(e Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// Events returns a copy of the events so far.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// Recovery is, for each fault, how long after it an operation that started
// after it first succeeded (-1: none did).
type Recovery struct {
	Fault string        `json:"fault"`
	At    time.Duration `json:"at_ns"`
	After time.Duration `json:"after_ns"`
}

// Recoveries computes the time to recovery of every fault.
func (h *History) Recoveries() []Recovery {
	evs := h.Events()
	var out []Recovery
	for _, f := range evs {
		if f.Kind != "fault" {
			continue
		}
		r := Recovery{Fault: f.What, At: f.At, After: -1}
		for _, e := range evs {
			if e.Kind == "op" && e.OK && e.Start >= f.At && (r.After < 0 || e.At-f.At < r.After) {
				r.After = e.At - f.At
			}
		}
		out = append(out, r)
	}
	return out
}
