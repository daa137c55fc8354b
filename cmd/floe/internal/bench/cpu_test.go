package bench

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestStatCPUSeconds: utime and stime are found after a command name with
// spaces and parentheses, in USER_HZ ticks; a truncated line is an error.
func TestStatCPUSeconds(t *testing.T) {
	stat := "4242 (floe (x) y) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 130 0 0 20 0 12 0 100 0 0\n"
	got, err := statCPUSeconds(stat)
	if err != nil || got != 3.8 {
		t.Fatalf("statCPUSeconds = %v, %v; want 3.8 (380 ticks)", got, err)
	}
	for _, bad := range []string{"", "4242 floe S 1", "4242 (floe) S 1 2 3", "4242 (floe) S 1 4242 4242 0 -1 4194560 1200 0 0 0 x 130"} {
		if _, err := statCPUSeconds(bad); err == nil {
			t.Errorf("statCPUSeconds(%q) took it", bad)
		}
	}
}

// TestParseNodePIDs: ids of running processes are taken; anything else is
// a usage error naming it.
func TestParseNodePIDs(t *testing.T) {
	self := os.Getpid()
	pids, err := ParseNodePIDs(" " + strconv.Itoa(self) + "," + strconv.Itoa(self))
	if err != nil || len(pids) != 2 || pids[0] != self {
		t.Fatalf("ParseNodePIDs = %v, %v", pids, err)
	}
	if pids, err := ParseNodePIDs(""); err != nil || pids != nil {
		t.Fatalf("empty list: %v, %v", pids, err)
	}
	for _, bad := range []string{"x", "0", "-3", strconv.Itoa(self) + ",", "999999999"} {
		_, err := ParseNodePIDs(bad)
		if err == nil {
			t.Errorf("ParseNodePIDs(%q) = %v, want an error", bad, err)
		}
	}
}

// TestCPUWindow: a window over this process, named as the node, counts
// the CPU time spent in it for the nodes and the client, and per
// operation.
func TestCPUWindow(t *testing.T) {
	m := markCPU([]int{os.Getpid()})
	start := selfCPUSeconds()
	x := 0
	for selfCPUSeconds()-start < 0.1 { // 100 ms of CPU, whatever the wall time
		for i := range 100000 {
			x += i
		}
	}
	_ = x
	r := m.since().result(1000)
	// /proc counts in 10 ms ticks, the tick of the mark and of the end may
	// each cut a few off.
	if r.ServerCPUs < 0.07 || r.ClientCPUs < 0.1 || r.CPUNote != "" {
		t.Fatalf("window of 100 ms of CPU: %+v", r)
	}
	if want := r.ServerCPUs / 1000 * 1e6; r.ServerCPUusOp != want {
		t.Fatalf("server µs/op %v, want %v", r.ServerCPUusOp, want)
	}
	if line := r.cpuLine(); !strings.HasPrefix(line, "nodes ") {
		t.Fatalf("cpu line %q", line)
	}
	// Without nodes only the client's; a node gone meanwhile is said so.
	if r := markCPU(nil).since().result(10); r.ServerCPUs != 0 || r.CPUNote != "" || !strings.Contains(r.cpuLine(), "--node-pids") {
		t.Fatalf("no nodes: %+v %q", r, r.cpuLine())
	}
	gone := cpuMark{pids: []int{999999999}}.since().result(10)
	if gone.ServerCPUs != 0 || !strings.Contains(gone.CPUNote, "999999999") {
		t.Fatalf("a node that exited: %+v", gone)
	}
}
