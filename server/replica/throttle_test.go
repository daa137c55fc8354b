package replica

import (
	"testing"
	"time"
)

// The move throttle admits learners' fetches while it holds tokens, takes
// their bytes after (into debt), and admits again once the debt is paid at
// the bound's rate; no bound admits everything.
func TestMoveThrottle(t *testing.T) {
	var th moveThrottle
	now := time.Unix(1_800_000_000, 0)
	if !th.admit(now) || th.take(now, 100<<20) != 0 {
		t.Fatal("no bound: a learner was held back")
	}
	th.set(1 << 20) // 1 MiB/s
	if !th.admit(now) {
		t.Fatal("a full bucket refused a learner")
	}
	wait := th.take(now, 3<<20)
	if wait < 2900*time.Millisecond || wait > 3*time.Second {
		t.Fatalf("3 MiB at 1 MiB/s: out of debt in %v, want about 2.9 s", wait)
	}
	if th.admit(now.Add(time.Second)) {
		t.Fatal("admitted while in debt")
	}
	if !th.admit(now.Add(wait + time.Millisecond)) {
		t.Fatal("not admitted once the debt was paid")
	}
	th.set(0)
	if !th.admit(now) {
		t.Fatal("bound removed: a learner was held back")
	}
}
