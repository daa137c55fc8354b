package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// bench hostile sends a node the requests that once exhausted it (a zstd
// payload inflating to 1 GiB, a fetch of 1M buckets, a lookup of 7M keys,
// a Hello of 500k peers, a 15 MiB database name) and the connections that
// hold its resources (a Writes stream stalled mid-message, idle and
// prefix-only Raft connections), each from several connections for a
// while, as a normal client produces and looks up meanwhile. It reports,
// per attack, the node's peak resident memory above its idle level,
// whether it stayed up, and how the normal client fared.

const hostileDatabase = "bench_hostile"

// HostileOptions are the options of bench hostile.
type HostileOptions struct {
	// Addr is the node to attack ("": start a floe dev node of Binary on
	// DataDir, each "" for this binary and a temporary folder).
	Addr    string
	Binary  string
	DataDir string
	// PID is the process id of the node at Addr, for its memory (0:
	// unknown, no memory figures).
	PID int
	// Duration is how long each attack runs, with Conns connections.
	Duration time.Duration
	Conns    int
	// Attacks are the names of the attacks to run (HostileAttackNames).
	Attacks []string
}

// HostileRow is what one attack did to the node.
type HostileRow struct {
	Attack string `json:"attack"`
	About  string `json:"about"`
	Conns  int    `json:"conns"`
	// Attempts and Refused count the attack's requests (or connections)
	// and those the node refused or closed.
	Attempts int64  `json:"attempts"`
	Refused  int64  `json:"refused"`
	LastErr  string `json:"last_error,omitempty"`
	// Memory, in bytes: the node's VmRSS idle (before the first attack),
	// before this one, and the peak during it.
	IdleRSS   int64 `json:"idle_rss_bytes,omitempty"`
	BeforeRSS int64 `json:"before_rss_bytes,omitempty"`
	PeakRSS   int64 `json:"peak_rss_bytes,omitempty"`
	// NodeUp: the node still answered a normal call after the attack.
	NodeUp bool `json:"node_up"`
	// The normal client's writes and lookups during the attack.
	ClientOK     int64  `json:"client_ok"`
	ClientErrors int64  `json:"client_errors"`
	ClientErr    string `json:"client_last_error,omitempty"`
}

// Hostile starts or finds the node, sets up the tables, and runs each
// attack in turn, reporting which to progress.
func Hostile(ctx context.Context, f *HostileOptions, progress io.Writer) ([]HostileRow, error) {
	stderr := &syncWriter{w: progress}
	attacks, err := chooseAttacks(f.Attacks)
	if err != nil {
		return nil, err
	}
	pid := f.PID
	addr := f.Addr
	if addr == "" {
		binary, dir := f.Binary, f.DataDir
		var err error
		if binary == "" {
			if binary, err = os.Executable(); err != nil {
				return nil, err
			}
		}
		if dir == "" {
			if dir, err = os.MkdirTemp("", "floe-hostile-"); err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
		}
		node, err := newDensityNode(binary, dir, stderr)
		if err != nil {
			return nil, err
		}
		if err := node.start(); err != nil {
			return nil, err
		}
		defer node.stop()
		readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err = retryUntil(readyCtx, func() error { return node.ready(readyCtx) })
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the node never became ready: %w", err)
		}
		addr, pid = node.addr, node.cmd.Process.Pid
	}
	c, err := client.Connect(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	target, normal, err := setupHostile(ctx, c, addr)
	if err != nil {
		return nil, err
	}
	defer normal.close(ctx)
	idle := hostileRSS(pid)
	var rows []HostileRow
	for _, a := range attacks {
		fmt.Fprintf(stderr, "%s: %s, %v\n", a.name, a.about, f.Duration)
		row := runHostile(ctx, f, pid, a, target, normal)
		row.IdleRSS = idle
		rows = append(rows, row)
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
	}
	return rows, nil
}

// hostileNormal is the well-behaved client: it appends to the log table
// and looks up the primary-key table.
type hostileNormal struct {
	writer *client.AppendWriter
	lookup *client.Lookuper
}

func (n *hostileNormal) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = n.writer.Close(ctx)
	n.lookup.Close()
}

// once writes a row and looks one up, waiting for both.
func (n *hostileNormal) once(ctx context.Context) error {
	fut, err := n.writer.AppendJSON(ctx, []byte(`{"id":1,"payload":"aGk="}`))
	if err != nil {
		return err
	}
	if _, err := fut.Wait(ctx); err != nil {
		return err
	}
	_, found, err := n.lookup.LookupJSON(ctx, []byte(`{"id":"k1"}`))
	if err == nil && !found {
		err = errors.New("the lookup's key is missing")
	}
	return err
}

// setupHostile creates the tables, writes the key the normal client looks
// up, and returns the attacks' target and the normal client.
func setupHostile(ctx context.Context, c *client.Client, addr string) (*hostileTarget, *hostileNormal, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.Admin().CreateDatabase(ctx, hostileDatabase, client.IfNotExists()); err != nil {
		return nil, nil, err
	}
	for _, spec := range []client.TableSpec{
		{Database: hostileDatabase, Name: "events", Schema: LogSchema, Buckets: 1},
		{Database: hostileDatabase, Name: "kv", Schema: KVSchema, PrimaryKey: []string{"id"}, Buckets: 1},
	} {
		if _, err := c.Admin().CreateTable(ctx, spec, client.IfNotExists()); err != nil {
			return nil, nil, err
		}
	}
	events, err := c.Table(ctx, hostileDatabase, "events")
	if err != nil {
		return nil, nil, err
	}
	kv, err := c.Table(ctx, hostileDatabase, "kv")
	if err != nil {
		return nil, nil, err
	}
	up, err := kv.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		return nil, nil, err
	}
	err = retryUntil(ctx, func() error {
		fut, err := up.UpsertJSON(ctx, []byte(`{"id":"k1","v":"aGk="}`))
		if err != nil {
			return err
		}
		_, err = fut.Wait(ctx)
		return err
	})
	_ = up.Close(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("write the lookup's key: %w", err)
	}
	writer, err := events.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		return nil, nil, err
	}
	lookup, err := kv.NewLookuper(client.LookuperOptions{})
	if err != nil {
		return nil, nil, err
	}
	normal := &hostileNormal{writer: writer, lookup: lookup}
	if err := retryUntil(ctx, func() error { return normal.once(ctx) }); err != nil {
		return nil, nil, fmt.Errorf("the normal client: %w", err)
	}
	schema := events.Info().SchemaID
	return &hostileTarget{addr: addr, logTableID: events.ID(), logSchemaID: int16(schema), kvTableID: kv.ID(),
		dialTimeout: 5 * time.Second, callDeadline: 30 * time.Second}, normal, nil
}

// runHostile runs one attack for the flags' duration beside the normal
// client and a memory sampler.
func runHostile(ctx context.Context, f *HostileOptions, pid int, a hostileAttack, t *hostileTarget, normal *hostileNormal) HostileRow {
	conns := a.conns
	if conns == 0 {
		conns = f.Conns
	}
	row := HostileRow{Attack: a.name, About: a.about, Conns: conns, BeforeRSS: hostileRSS(pid)}
	attackCtx, stop := context.WithTimeout(ctx, f.Duration)
	defer stop()
	var wg sync.WaitGroup
	var attempts, refused atomic.Int64
	var errMu sync.Mutex
	// A request in flight when the window closes is answered and counted
	// (the call's own deadline bounds it): a slow node, or a large request
	// on a loaded machine, would otherwise count none. A connection attack
	// holds its connections for the window only.
	runCtx := ctx
	if a.holds {
		runCtx = attackCtx
	}
	for range conns {
		wg.Go(func() {
			for attackCtx.Err() == nil {
				attempts.Add(1)
				if err := a.run(runCtx, t); err != nil && (!a.holds || attackCtx.Err() == nil) {
					refused.Add(1)
					errMu.Lock()
					row.LastErr = err.Error()
					errMu.Unlock()
					// A closed connection comes back at once: pace the
					// retries so they measure the node, not the loop.
					select {
					case <-time.After(50 * time.Millisecond):
					case <-attackCtx.Done():
					}
				}
			}
		})
	}
	var ok, failed atomic.Int64
	var lastClientErr atomic.Value
	wg.Go(func() {
		for attackCtx.Err() == nil {
			callCtx, cancel := context.WithTimeout(attackCtx, 10*time.Second)
			err := normal.once(callCtx)
			cancel()
			switch {
			case err == nil:
				ok.Add(1)
			case attackCtx.Err() == nil:
				failed.Add(1)
				lastClientErr.Store(err.Error())
			}
		}
	})
	peak := row.BeforeRSS
	tick := time.NewTicker(100 * time.Millisecond)
	for attackCtx.Err() == nil {
		select {
		case <-tick.C:
			peak = max(peak, hostileRSS(pid))
		case <-attackCtx.Done():
		}
	}
	tick.Stop()
	wg.Wait()
	row.PeakRSS = max(peak, hostileRSS(pid))
	row.Attempts, row.Refused = attempts.Load(), refused.Load()
	row.ClientOK, row.ClientErrors = ok.Load(), failed.Load()
	if s, _ := lastClientErr.Load().(string); s != "" {
		row.ClientErr = s
	}
	upCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	row.NodeUp = hostileAlive(pid) && normal.once(upCtx) == nil
	cancel()
	return row
}

// hostileRSS is the node's VmRSS in bytes, 0 when its pid is unknown or
// unreadable.
func hostileRSS(pid int) int64 {
	if pid == 0 {
		return 0
	}
	rss, err := procRSSBytes(pid)
	if err != nil {
		return 0
	}
	return rss
}

// hostileAlive reports whether process pid exists (true when unknown).
func hostileAlive(pid int) bool {
	return pid == 0 || syscall.Kill(pid, 0) == nil
}

func PrintHostileRows(out io.Writer, rows []HostileRow) {
	mib := func(b int64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(b)/(1<<20))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "attack\tconns\tattempts\trefused\tidle MiB\tpeak above idle MiB\tnode up\tclient ok\tclient errors\tlast refusal")
	for _, r := range rows {
		above := "-"
		if r.IdleRSS > 0 {
			above = mib(max(r.PeakRSS-r.IdleRSS, 1))
		}
		last := r.LastErr
		if len(last) > 90 {
			last = last[:90] + "…"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%v\t%d\t%d\t%s\n", r.Attack, r.Conns, r.Attempts, r.Refused, mib(r.IdleRSS), above,
			r.NodeUp, r.ClientOK, r.ClientErrors, last)
	}
	tw.Flush()
	for _, r := range rows {
		if r.ClientErr != "" {
			fmt.Fprintf(out, "%s: the normal client's last error: %s\n", r.Attack, r.ClientErr)
		}
	}
}

// syncWriter serializes writes to w: the node this bench starts writes its
// log to the same stream as the bench's own progress, from the goroutine
// os/exec copies it with.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
