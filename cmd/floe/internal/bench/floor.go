package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/storage/logstore"
	"golang.org/x/sys/unix"
)

// bench floor measures what this machine allows a local cluster before any
// of Floe runs: what a durable write costs on the disk, and what a message
// between two idle processes costs.
//
// Disk: writers each append records to their own file, prepared as the log
// prepares its segments (allocated ahead in chunks), and fdatasync after
// every record. One writer is one node's commit; N writers at once is what
// N replicas whose logs share this disk pay, each waiting for its own flush
// while the device serves the others'.
//
// Round trip: a child process (this binary again) echoes messages over
// loopback TCP, with a pause before each (idle: both processes asleep when
// it arrives, as the nodes are between one caller's writes) and without
// (busy).
//
// An acks=all write by one caller to N local replicas waits for at least
// two such idle round trips (client to leader to follower, and back) and
// the follower's fdatasync, which shares the disk with the other
// replicas': the floor-acks-all-N row, whatever the software does.

// diskChunkBytes is how far ahead a writer's file is allocated, as the
// log's preallocation does once a segment is busy.
const diskChunkBytes = 8 << 20

// FloorEchoEnv set makes this binary the echo child of bench floor.
const FloorEchoEnv = "FLOE_BENCH_FLOOR_ECHO"

// FloorOptions are the options of bench floor.
type FloorOptions struct {
	// Dir is a folder on the disk to measure ("": the system's temporary
	// folder); the benchmark's files are removed at the end.
	Dir string
	// WriterCounts are the numbers of writers at once, one row each.
	WriterCounts []int
	// Duration is how long each row measures.
	Duration time.Duration
	// RecordBytes is appended before each fdatasync, and is each round
	// trip's message.
	RecordBytes int
	// Pause comes before each idle round trip.
	Pause time.Duration
	// Binary is the floe binary the echo child runs ("": this one).
	Binary string
}

// benchFloor measures the disk, then the round trips, and adds the floor
// of an acks=all write for each writer count above one.
func Floor(ctx context.Context, f *FloorOptions, progress io.Writer) ([]SuiteRow, error) {
	dir, err := os.MkdirTemp(f.Dir, "floe-bench-floor-")
	if err != nil {
		return nil, fmt.Errorf("bench floor: %w", err)
	}
	defer os.RemoveAll(dir)
	var rows []SuiteRow
	for _, n := range f.WriterCounts {
		fmt.Fprintf(progress, "%s, %v\n", diskNote(n), f.Duration)
		row, err := diskRound(ctx, dir, n, f)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(progress, "round trips to an echoing child process, idle and busy, %v each\n", f.Duration)
	idle, busy, err := roundTrips(ctx, f)
	if err != nil {
		return nil, err
	}
	rows = append(rows, idle, busy)
	for _, d := range rows[:len(f.WriterCounts)] {
		if d.Concurrency > 1 {
			rows = append(rows, acksAllFloor(d, idle))
		}
	}
	return rows, nil
}

// acksAllFloor is the least one caller's acks=all write to disk.Concurrency
// local replicas can take: two idle round trips and the follower's
// fdatasync while the others sync too (sums of the percentiles: a floor,
// not a prediction).
func acksAllFloor(disk, idle SuiteRow) SuiteRow {
	n := disk.Concurrency
	return SuiteRow{Kind: "phys", System: "machine", Test: fmt.Sprintf("floor-acks-all-%d", n), Concurrency: 1, ValueSize: disk.ValueSize,
		P50us: 2*idle.P50us + disk.P50us, P99us: 2*idle.P99us + disk.P99us,
		Durability: fmt.Sprintf("fdatasync on %d replicas sharing one disk", n),
		Note:       fmt.Sprintf("2 idle round trips + one fdatasync of %s at once: the least one caller's acks=all write to %d local replicas waits", plural(int64(n), "writer"), n)}
}

// diskRound runs n writers at once for the flags' duration and sums them
// up in one row.
func diskRound(ctx context.Context, dir string, n int, f *FloorOptions) (SuiteRow, error) {
	writers := make([]*diskWriter, n)
	for i := range writers {
		w, err := newDiskWriter(filepath.Join(dir, fmt.Sprintf("writers-%d-%d", n, i)))
		if err != nil {
			return SuiteRow{}, err
		}
		defer w.close()
		writers[i] = w
	}
	lat := make([]*reservoir, n)
	errs := make([]error, n)
	record := make([]byte, f.RecordBytes)
	for i := range record {
		record[i] = byte(i)
	}
	mark := markCPU(nil)
	start := time.Now()
	deadline := start.Add(f.Duration)
	var wg sync.WaitGroup
	for i, w := range writers {
		lat[i] = newReservoir(maxLatencySamples / n)
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t := time.Now()
				if err := w.append(record); err != nil {
					errs[i] = err
					return
				}
				lat[i].add(time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	use := mark.since()
	if err := errors.Join(errs...); err != nil {
		return SuiteRow{}, fmt.Errorf("bench floor: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return SuiteRow{}, err
	}
	st := mergeLatencies(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	secs := max(elapsed.Seconds(), 1e-9)
	return SuiteRow{Kind: "phys", System: "machine", Test: fmt.Sprintf("fsync-%d", n), Concurrency: n, ValueSize: f.RecordBytes,
		Ops: st.count, Seconds: elapsed.Seconds(), OpsPerSec: float64(st.count) / secs,
		MBPerSec: float64(st.count) * float64(f.RecordBytes) / 1e6 / secs,
		P50us:    us(st.p50), P99us: us(st.p99), P999us: us(st.p999), MaxUs: us(st.max),
		Durability: "pwrite + fdatasync of every record",
		Note:       diskNote(n),
		// The CPU time is the kernel's work for a write and its flush,
		// almost all of it: the loop around them does nothing else.
		CPUResult: use.result(st.count)}, nil
}

// diskNote says what a disk row measured.
func diskNote(n int) string {
	if n == 1 {
		return "pwrite + fdatasync, 1 writer"
	}
	return fmt.Sprintf("pwrite + fdatasync, %d writers at once, a file each", n)
}

// diskWriter appends to one file the way a log segment is written.
type diskWriter struct {
	f         *os.File
	size      int64
	allocated int64
}

func newDiskWriter(path string) (*diskWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bench floor: %w", err)
	}
	return &diskWriter{f: f}, nil
}

// append writes b at the end and makes it durable: fdatasync, or a full
// fsync when the write grew the file's allocation (its length must be
// durable then, as the log's first sync after a preallocation is).
func (w *diskWriter) append(b []byte) error {
	end := w.size + int64(len(b))
	full := false
	if end > w.allocated {
		grow := max(end, w.allocated+diskChunkBytes)
		if err := logstore.Allocate(w.f, w.allocated, grow); err != nil {
			return err
		}
		w.allocated, full = grow, true
	}
	if _, err := w.f.WriteAt(b, w.size); err != nil {
		return err
	}
	w.size = end
	if full {
		return w.f.Sync()
	}
	if err := unix.Fdatasync(int(w.f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", w.f.Name(), err)
	}
	return nil
}

func (w *diskWriter) close() { _ = w.f.Close() }

// roundTrips starts the echo child and times round trips to it: with
// --pause before each (idle), then back to back (busy).
func roundTrips(ctx context.Context, f *FloorOptions) (idle, busy SuiteRow, err error) {
	binary := f.Binary
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			return idle, busy, fmt.Errorf("bench floor: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, binary, "bench", "floor")
	cmd.Env = append(os.Environ(), FloorEchoEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return idle, busy, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return idle, busy, err
	}
	if err := cmd.Start(); err != nil {
		return idle, busy, fmt.Errorf("bench floor: start the echo child %s: %w", binary, err)
	}
	defer func() {
		stdin.Close() // the child exits when its stdin closes
		_ = cmd.Wait()
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return idle, busy, fmt.Errorf("bench floor: the echo child %s gave no address: %w", binary, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", strings.TrimSpace(addr))
	if err != nil {
		return idle, busy, fmt.Errorf("bench floor: dial the echo child: %w", err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if idle, err = timeRoundTrips(ctx, conn, f, f.Pause); err != nil {
		return idle, busy, err
	}
	busy, err = timeRoundTrips(ctx, conn, f, 0)
	return idle, busy, err
}

// timeRoundTrips sends messages of the record size and waits for each
// echo, pausing before each, for the flags' duration.
func timeRoundTrips(ctx context.Context, conn net.Conn, f *FloorOptions, pause time.Duration) (SuiteRow, error) {
	msg := make([]byte, f.RecordBytes)
	back := make([]byte, f.RecordBytes)
	lat := newReservoir(maxLatencySamples)
	start := time.Now()
	deadline := start.Add(f.Duration)
	if err := conn.SetDeadline(deadline.Add(10 * time.Second)); err != nil {
		return SuiteRow{}, err
	}
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if pause > 0 {
			time.Sleep(pause)
		}
		t := time.Now()
		if _, err := conn.Write(msg); err != nil {
			return SuiteRow{}, fmt.Errorf("bench floor: round trip: %w", err)
		}
		if _, err := io.ReadFull(conn, back); err != nil {
			return SuiteRow{}, fmt.Errorf("bench floor: round trip: %w", err)
		}
		lat.add(time.Since(t))
	}
	if err := ctx.Err(); err != nil {
		return SuiteRow{}, err
	}
	st := mergeLatencies([]*reservoir{lat})
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	elapsed := time.Since(start)
	test, note := "rtt-busy", "loopback round trip, back to back"
	if pause > 0 {
		test, note = "rtt-idle", fmt.Sprintf("loopback round trip to an idle process (%v apart)", pause)
	}
	// No CPU time: this process's would be mostly its pauses' timers.
	return SuiteRow{Kind: "phys", System: "machine", Test: test, Concurrency: 1, ValueSize: f.RecordBytes,
		Ops: st.count, Seconds: elapsed.Seconds(), OpsPerSec: float64(st.count) / max(elapsed.Seconds(), 1e-9),
		P50us: us(st.p50), P99us: us(st.p99), P999us: us(st.p999), MaxUs: us(st.max), Note: note}, nil
}

// runFloorEcho is the echo child: it listens on a loopback port, prints
// the address on out, and echoes what one connection sends until the
// connection or in closes.
func RunFloorEcho(in io.Reader, out io.Writer) error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer lis.Close()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		lis.Close()
		os.Exit(0)
	}()
	if _, err := fmt.Fprintln(out, lis.Addr().String()); err != nil {
		return err
	}
	conn, err := lis.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	_, err = io.Copy(conn, conn)
	return err
}

// printFloorRows prints bench floor's table and the floors it implies.
func PrintFloorRows(out io.Writer, f *FloorOptions, rows []SuiteRow) error {
	fmt.Fprintf(out, "floe bench floor: %d-byte records and messages\n", f.RecordBytes)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TEST\tWHAT\tOPS/S\tP50 MS\tP99 MS\tP999 MS\tMAX MS\tCPU µS/OP\t")
	for _, r := range rows {
		if strings.HasPrefix(r.Test, "floor-") {
			continue
		}
		cpu := "-"
		if r.ClientCPUusOp > 0 {
			cpu = fmt.Sprintf("%.1f", r.ClientCPUusOp)
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t\n", r.Test, r.Note, r.OpsPerSec,
			r.P50us/1000, r.P99us/1000, r.P999us/1000, r.MaxUs/1000, cpu)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Test, "floor-") {
			fmt.Fprintf(out, "%s: p50 %.3f ms, p99 %.3f ms (%s)\n", r.Test, r.P50us/1000, r.P99us/1000, r.Note)
		}
	}
	return nil
}

// plural is "1 noun" or "n nouns".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
