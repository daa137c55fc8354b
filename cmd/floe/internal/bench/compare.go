package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// benchTarget is one of the write and read targets: a suite test against
// a peer's row (a ratio of throughputs), or against a latency bound.
type benchTarget struct {
	test string // the suite test (SuiteRow.Test)
	// peer: the peer kit's row, by system prefix ("redis" matches any
	// redis-* row), test name and concurrency. Empty for a latency bound.
	peerSystem, peerTest string
	peerConc             int
	minRatio             float64 // Floe's ops/s at least this times the peer's
	// percentile ("p50", "p99") at most maxMs, for a latency bound.
	percentile string
	maxMs      float64
	// floorReplicas, for a latency bound on one caller's acks=all writes:
	// the local replicas the write waits for, whose logs share the test
	// machine's disk; bench floor's floor-acks-all-N row is then the least
	// the write can wait.
	floorReplicas int
}

// benchTargets are the targets of small writes at high concurrency (3
// local nodes, RF 3, acks=all, fsync on, 1 KiB): what `floe bench
// compare` checks a suite run against.
var benchTargets = []benchTarget{
	{test: "append-64", peerSystem: "nats-jetstream", peerTest: "append sync (publish+ack)", peerConc: 64, minRatio: 1},
	{test: "append-64-shared", peerSystem: "nats-jetstream", peerTest: "append sync (publish+ack)", peerConc: 64, minRatio: 2},
	{test: "upsert-128-shared", peerSystem: "redis-aof-always", peerTest: "upsert (SET)", peerConc: 128, minRatio: 1},
	{test: "upsert-128", peerSystem: "nats-kv", peerTest: "upsert (put)", peerConc: 128, minRatio: 2},
	{test: "upsert-8x500", peerSystem: "redis-aof-always", peerTest: "upsert (SET)", peerConc: 128, minRatio: 1.2},
	{test: "lookup-32x500", peerSystem: "redis", peerTest: "point lookup (GET) pipelined", minRatio: 1.2},
	{test: "upsert-1", percentile: "p50", maxMs: 1.0, floorReplicas: 3},
	{test: "append-1", percentile: "p50", maxMs: 0.5, floorReplicas: 3},
	{test: "e2e-10000", percentile: "p99", maxMs: 10},
}

// ReadResultLines reads JSON lines of suite or peer-kit results (a suite
// line has the peer kit's fields); lines that are not JSON objects (a
// tee'd progress line) are skipped.
func ReadResultLines(r io.Reader) ([]SuiteRow, error) {
	var rows []SuiteRow
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var row SuiteRow
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			return nil, fmt.Errorf("line %q: %w", clip(line, 80), err)
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}

// clip shortens s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Comparison is one target checked: the figures, the ratio or bound, and
// whether it is met. Missing says which side had no row.
type Comparison struct {
	Test    string  `json:"test"`
	Floe    float64 `json:"floe"`           // ops/s, or the percentile in ms
	Peer    float64 `json:"peer,omitempty"` // the peer's ops/s
	PeerRow string  `json:"peer_row,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Target  string  `json:"target"`
	Met     bool    `json:"met"`
	Missing string  `json:"missing,omitempty"`
	// CPU time per operation, nodes (servers) and client together, of
	// each side: set when both rows have their servers' (a suite run with
	// --node-pids). It moves less than the ratio of throughputs with how
	// fast the machine is that day.
	FloeCPUusOp float64 `json:"floe_cpu_us_per_op,omitempty"`
	PeerCPUusOp float64 `json:"peer_cpu_us_per_op,omitempty"`
	// FloorMs, for a latency bound with a bench floor row (either file):
	// the same percentile of the least such a write can wait on this
	// machine (two idle round trips and an fdatasync on the shared disk).
	// A bound below it cannot be met here (BelowFloor).
	FloorMs    float64 `json:"floor_ms,omitempty"`
	FloorRow   string  `json:"floor_row,omitempty"`
	BelowFloor bool    `json:"below_floor,omitempty"`
}

// Compare checks every target against the rows of one suite run
// and one peer-kit run.
func Compare(floe, peers []SuiteRow) []Comparison {
	var out []Comparison
	for _, t := range benchTargets {
		c := Comparison{Test: t.test}
		f, ok := findRow(floe, func(r SuiteRow) bool { return r.System == "floe" && r.Test == t.test })
		if t.percentile != "" {
			c.Target = fmt.Sprintf("%s <= %g ms", t.percentile, t.maxMs)
			if !ok {
				c.Missing = "floe"
			} else {
				c.Floe = f.P50us / 1000
				if t.percentile == "p99" {
					c.Floe = f.P99us / 1000
				}
				c.Met = c.Floe <= t.maxMs
			}
			if t.floorReplicas > 0 {
				setFloor(&c, t, slices.Concat(floe, peers))
			}
			out = append(out, c)
			continue
		}
		c.Target = fmt.Sprintf(">= %gx %s", t.minRatio, t.peerSystem)
		p, pok := findRow(peers, func(r SuiteRow) bool {
			return r.Kind == "peer" && strings.HasPrefix(r.System, t.peerSystem) && r.Test == t.peerTest &&
				(t.peerConc == 0 || r.Concurrency == t.peerConc)
		})
		switch {
		case !ok:
			c.Missing = "floe"
		case !pok:
			c.Missing = "peer"
		default:
			c.Floe, c.Peer = f.OpsPerSec, p.OpsPerSec
			c.PeerRow = fmt.Sprintf("%s %s at %d", p.System, p.Test, p.Concurrency)
			c.Target = fmt.Sprintf(">= %gx %s", t.minRatio, p.System)
			if p.OpsPerSec > 0 {
				c.Ratio = f.OpsPerSec / p.OpsPerSec
			}
			c.Met = c.Ratio >= t.minRatio
			if f.ServerCPUs > 0 && p.ServerCPUs > 0 {
				c.FloeCPUusOp, c.PeerCPUusOp = cpuPerOp(f), cpuPerOp(p)
			}
		}
		out = append(out, c)
	}
	return out
}

// setFloor sets c's floor from the bench floor row of t's replicas, when
// there is one.
func setFloor(c *Comparison, t benchTarget, rows []SuiteRow) {
	test := fmt.Sprintf("floor-acks-all-%d", t.floorReplicas)
	d, ok := findRow(rows, func(r SuiteRow) bool { return r.System == "machine" && r.Test == test && r.P50us > 0 })
	if !ok {
		return
	}
	c.FloorMs, c.FloorRow = d.P50us/1000, "floor"
	if t.percentile == "p99" {
		c.FloorMs = d.P99us / 1000
	}
	c.BelowFloor = t.maxMs < c.FloorMs
}

// cpuPerOp is a row's server and client CPU time per operation, in µs.
func cpuPerOp(r SuiteRow) float64 {
	if r.Ops <= 0 {
		return 0
	}
	return (r.ServerCPUs + r.ClientCPUs) / float64(r.Ops) * 1e6
}

// findRow is the first row that matches.
func findRow(rows []SuiteRow, match func(SuiteRow) bool) (SuiteRow, bool) {
	if i := slices.IndexFunc(rows, match); i >= 0 {
		return rows[i], true
	}
	return SuiteRow{}, false
}

// CountMissed is the number of targets not met.
func CountMissed(cmp []Comparison) int {
	n := 0
	for _, c := range cmp {
		if !c.Met {
			n++
		}
	}
	return n
}

// PrintComparison prints the Comparison as a table.
func PrintComparison(w io.Writer, cmp []Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tFLOE\tPEER\tRATIO\tTARGET\tMET\tCPU µS/OP FLOE/PEER\t")
	for _, c := range cmp {
		met := "yes"
		if !c.Met {
			met = "no"
		}
		cpu := "-"
		if c.FloeCPUusOp > 0 {
			cpu = fmt.Sprintf("%.1f/%.1f", c.FloeCPUusOp, c.PeerCPUusOp)
		}
		switch {
		case c.Missing != "":
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\tno (no %s row)\t-\t\n", c.Test, c.Target, c.Missing)
		case c.FloorRow != "":
			// The peer's column holds the machine's floor, the ratio
			// Floe's figure over it.
			if c.BelowFloor {
				met += " (bound below the machine's floor)"
			}
			fmt.Fprintf(tw, "%s\t%.2f ms\t%s %.2f ms\t%.2fx\t%s\t%s\t-\t\n", c.Test, c.Floe, c.FloorRow, c.FloorMs, c.Floe/c.FloorMs, c.Target, met)
		case c.PeerRow == "":
			fmt.Fprintf(tw, "%s\t%.2f ms\t-\t-\t%s\t%s\t-\t\n", c.Test, c.Floe, c.Target, met)
		default:
			fmt.Fprintf(tw, "%s\t%.0f/s\t%.0f/s\t%.2fx\t%s\t%s\t%s\t\n", c.Test, c.Floe, c.Peer, c.Ratio, c.Target, met, cpu)
		}
	}
	return tw.Flush()
}
