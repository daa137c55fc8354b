package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// A benchmark's CPU time, as the peer kit counts it: the node processes'
// (utime+stime of /proc/PID/stat, for the PIDs --node-pids names: nodes
// on this machine) and the benchmark's own (getrusage), over the same
// window as its throughput. Per operation, it is the cost of a record, a
// row or a key, which moves less with the machine's speed that day than
// throughput ratios against peers measured minutes apart do.

// clockTicksPerSecond is the unit of utime and stime in /proc/PID/stat
// (sysconf(_SC_CLK_TCK), `getconf CLK_TCK`). The kernel exports USER_HZ to
// user space, which is 100 on every Linux architecture Go supports.
const clockTicksPerSecond = 100

// ParseNodePIDs reads a list of node process ids (--node-pids):
// comma-separated, each of a running process whose CPU time this machine
// shows.
func ParseNodePIDs(list string) ([]int, error) {
	if list == "" {
		return nil, nil
	}
	var pids []int
	for _, s := range strings.Split(list, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("%q is not a process id", s)
		}
		if _, err := procCPUSeconds(pid); err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// procCPUSeconds is the CPU time process pid has used so far.
func procCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	secs, err := statCPUSeconds(string(b))
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: /proc/%d/stat: %w", pid, pid, err)
	}
	return secs, nil
}

// statCPUSeconds reads utime+stime from the text of a /proc/PID/stat.
func statCPUSeconds(stat string) (float64, error) {
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses; utime and stime are fields 14 and 15, the 12th and 13th
	// after it.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", clip(stat, 40))
	}
	fields := strings.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return float64(ticks) / clockTicksPerSecond, nil
}

// selfCPUSeconds is the CPU time this process has used so far.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// cpuMark is a reading taken when a benchmark's window opens.
type cpuMark struct {
	pids   []int
	nodes  float64
	client float64
	err    error // a node's CPU time could not be read
}

// cpuUse is the CPU time a benchmark's window took.
type cpuUse struct {
	nodes    float64 // seconds, all nodes; valid when nodesErr is nil and pids were given
	client   float64
	measured bool  // nodes were named
	nodesErr error // a node's CPU time could not be read (it exited)
}

// markCPU opens a window.
func markCPU(pids []int) cpuMark {
	m := cpuMark{pids: pids, client: selfCPUSeconds()}
	m.nodes, m.err = nodesCPUSeconds(pids)
	return m
}

// since closes the window opened at m.
func (m cpuMark) since() cpuUse {
	u := cpuUse{client: selfCPUSeconds() - m.client, measured: len(m.pids) > 0, nodesErr: m.err}
	if u.measured && u.nodesErr == nil {
		var nodes float64
		nodes, u.nodesErr = nodesCPUSeconds(m.pids)
		u.nodes = nodes - m.nodes
	}
	return u
}

func nodesCPUSeconds(pids []int) (float64, error) {
	var sum float64
	for _, pid := range pids {
		s, err := procCPUSeconds(pid)
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// CPUResult is what a result line says of CPU time, in the peer kit's
// fields (server_cpu_s, client_cpu_s, server_cpu_us_per_op) and the
// client's per operation; the node fields only with --node-pids.
type CPUResult struct {
	ServerCPUs    float64 `json:"server_cpu_s,omitempty"`
	ClientCPUs    float64 `json:"client_cpu_s"`
	ServerCPUusOp float64 `json:"server_cpu_us_per_op,omitempty"`
	ClientCPUusOp float64 `json:"client_cpu_us_per_op,omitempty"`
	// CPUNote says why node figures are missing although --node-pids was
	// given.
	CPUNote string `json:"cpu_note,omitempty"`
}

// result is u for ops operations.
func (u cpuUse) result(ops int64) CPUResult {
	r := CPUResult{ClientCPUs: u.client}
	if ops > 0 {
		r.ClientCPUusOp = u.client / float64(ops) * 1e6
	}
	switch {
	case u.nodesErr != nil:
		r.CPUNote = "node CPU not measured: " + u.nodesErr.Error()
	case u.measured:
		r.ServerCPUs = u.nodes
		if ops > 0 {
			r.ServerCPUusOp = u.nodes / float64(ops) * 1e6
		}
	}
	return r
}

// cpuLine is the report's CPU line: per operation, nodes (when measured)
// and client.
func (r CPUResult) cpuLine() string {
	switch {
	case r.CPUNote != "":
		return fmt.Sprintf("client %.1f\t(%s)", r.ClientCPUusOp, r.CPUNote)
	case r.ServerCPUs > 0:
		return fmt.Sprintf("nodes %.1f\tclient %.1f", r.ServerCPUusOp, r.ClientCPUusOp)
	}
	return fmt.Sprintf("client %.1f\t(--node-pids for the nodes')", r.ClientCPUusOp)
}
