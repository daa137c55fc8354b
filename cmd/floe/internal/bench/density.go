package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// densityDatabase holds the tables of bench density.
const densityDatabase = "density"

// densityPollInterval paces the checks that every bucket serves.
const densityPollInterval = 50 * time.Millisecond

// DensityOptions are the options of bench density.
type DensityOptions struct {
	// Tables to create, half log, half primary-key, of Buckets each.
	Tables, Buckets int
	// Idle is the window over which the idle node's CPU is measured.
	Idle time.Duration
	// DataDir is the node's folder ("": a temporary one, removed at the
	// end); Binary the floe binary it runs ("": this one).
	DataDir string
	Binary  string
	// Timeout bounds the wait for every table to be served after a start.
	Timeout time.Duration
}

// DensityResult is what bench density measured.
type DensityResult struct {
	Mode    string `json:"mode"`
	Tables  int    `json:"tables"`
	Buckets int    `json:"buckets_per_table"`
	// CreateS is the time to create every table; ServeS the time from the
	// first create until every bucket answers a ListOffset.
	CreateS float64 `json:"create_s"`
	ServeS  float64 `json:"serve_s"`
	// IdleCPUPercent is the node's CPU time over the idle window, in
	// percent of one core.
	IdleCPUPercent float64 `json:"idle_cpu_percent"`
	IdleS          float64 `json:"idle_s"`
	RSSBytes       int64   `json:"rss_bytes"`
	FDs            int     `json:"fds"`
	Goroutines     int     `json:"goroutines"`
	// RestartS is the time from starting the stopped node again until
	// every bucket serves; StopS how long its clean stop took.
	StopS    float64 `json:"stop_s"`
	RestartS float64 `json:"restart_s"`
}

// benchDensity runs the node, creates the tables, measures it idle, and
// restarts it.
func Density(ctx context.Context, f *DensityOptions, stderr io.Writer) (DensityResult, error) {
	res := DensityResult{Mode: "density", Tables: f.Tables, Buckets: f.Buckets, IdleS: f.Idle.Seconds()}
	binary, dir := f.Binary, f.DataDir
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return res, err
		}
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "floe-density-"); err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
	}
	node, err := newDensityNode(binary, dir, stderr)
	if err != nil {
		return res, err
	}
	if err := node.start(); err != nil {
		return res, err
	}
	defer node.stop()

	names, err := createDensityTables(ctx, node, f, &res)
	if err != nil {
		return res, err
	}
	if err := measureIdle(ctx, node, f.Idle, &res); err != nil {
		return res, err
	}

	t0 := time.Now()
	if err := node.stop(); err != nil {
		return res, fmt.Errorf("stop the node: %w", err)
	}
	res.StopS = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := node.start(); err != nil {
		return res, err
	}
	if err := waitServing(ctx, node, f.Timeout, names); err != nil {
		return res, fmt.Errorf("after the restart: %w", err)
	}
	res.RestartS = time.Since(t0).Seconds()
	return res, nil
}

// createDensityTables waits for the node, creates the tables (even ones
// log tables, odd ones primary-key tables) and waits until every bucket
// serves; it returns the tables' names.
func createDensityTables(ctx context.Context, node *densityNode, f *DensityOptions, res *DensityResult) ([]string, error) {
	runCtx, cancel := node.whileRunning(ctx)
	defer cancel()
	runCtx, cancelTimeout := context.WithTimeout(runCtx, f.Timeout)
	defer cancelTimeout()
	// Tables are placed on registered tablet nodes: wait for the node's
	// registration, not only for its metadata service to answer.
	if err := retryUntil(runCtx, func() error { return node.ready(runCtx) }); err != nil {
		return nil, densityErr(runCtx, fmt.Errorf("the node never became ready: %w", err))
	}
	c, err := client.Connect(runCtx, node.addr)
	if err != nil {
		return nil, densityErr(runCtx, err)
	}
	defer c.Close()
	if err := c.Admin().CreateDatabase(runCtx, densityDatabase, client.IfNotExists()); err != nil {
		return nil, densityErr(runCtx, err)
	}
	names := make([]string, f.Tables)
	t0 := time.Now()
	for i := range names {
		spec := client.TableSpec{Database: densityDatabase, Schema: LogSchema, Buckets: int32(f.Buckets)}
		names[i] = fmt.Sprintf("log_%05d", i)
		if i%2 == 1 {
			spec.Schema, spec.PrimaryKey = KVSchema, []string{"id"}
			names[i] = fmt.Sprintf("kv_%05d", i)
		}
		spec.Name = names[i]
		if _, err := c.Admin().CreateTable(runCtx, spec, client.IfNotExists()); err != nil {
			return nil, densityErr(runCtx, fmt.Errorf("create %s.%s: %w", densityDatabase, names[i], err))
		}
	}
	res.CreateS = time.Since(t0).Seconds()
	if err := waitServing(ctx, node, f.Timeout, names); err != nil {
		return nil, err
	}
	res.ServeS = time.Since(t0).Seconds()
	return names, nil
}

// measureIdle samples the node's CPU time over idle, then its memory, file
// descriptors and goroutines.
func measureIdle(ctx context.Context, node *densityNode, idle time.Duration, res *DensityResult) error {
	cpu0, err := node.cpuTime()
	if err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return ctx.Err()
	case <-node.exited:
		return fmt.Errorf("the node exited while idle: %v", node.waitErr)
	}
	cpu1, err := node.cpuTime()
	if err != nil {
		return err
	}
	res.IdleCPUPercent = 100 * (cpu1 - cpu0).Seconds() / time.Since(t0).Seconds()
	if res.RSSBytes, err = node.rssBytes(); err != nil {
		return err
	}
	if res.FDs, err = node.openFiles(); err != nil {
		return err
	}
	res.Goroutines, err = node.goroutines(ctx)
	return err
}

// waitServing waits until every bucket of every table answers a
// ListOffset at its leader, within timeout.
func waitServing(ctx context.Context, node *densityNode, timeout time.Duration, names []string) error {
	ctx, cancel := node.whileRunning(ctx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	c, err := client.Connect(ctx, node.addr)
	if err != nil {
		return densityErr(ctx, err)
	}
	defer c.Close()
	for _, name := range names {
		if err := retryUntil(ctx, func() error { return bucketsServe(ctx, c, name) }); err != nil {
			return densityErr(ctx, fmt.Errorf("%s.%s: %w", densityDatabase, name, err))
		}
	}
	return nil
}

// bucketsServe checks each bucket of one table once.
func bucketsServe(ctx context.Context, c *client.Client, name string) error {
	tbl, err := c.Table(ctx, densityDatabase, name)
	if err != nil {
		return err
	}
	for b := range tbl.Buckets() {
		if _, err := tbl.ListOffset(ctx, b, client.Latest()); err != nil {
			return err
		}
	}
	return nil
}

// retryUntil calls fn every densityPollInterval until it succeeds or ctx
// ends; then it returns fn's last error.
func retryUntil(ctx context.Context, fn func() error) error {
	t := time.NewTicker(densityPollInterval)
	defer t.Stop()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-t.C:
		}
	}
}

// densityErr adds why ctx ended (the node exited, the timeout) to err.
func densityErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w (%v)", err, cause)
	}
	return err
}

// PrintDensityResult writes the result to w0 as a table, then as one JSON
// line.
func PrintDensityResult(w0 io.Writer, res DensityResult) error {
	w := tabwriter.NewWriter(w0, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "floe bench density: %d tables (half log, half primary-key) of %d buckets on one floe dev node\n", res.Tables, res.Buckets)
	fmt.Fprintf(w, "create\t%.2f s\tall served after %.2f s\n", res.CreateS, res.ServeS)
	fmt.Fprintf(w, "idle cpu\t%.2f %% of one core\tover %.0f s\n", res.IdleCPUPercent, res.IdleS)
	fmt.Fprintf(w, "rss\t%.1f MiB\n", float64(res.RSSBytes)/(1<<20))
	fmt.Fprintf(w, "fds\t%d\n", res.FDs)
	fmt.Fprintf(w, "goroutines\t%d\n", res.Goroutines)
	fmt.Fprintf(w, "restart\t%.2f s\tuntil every bucket serves (stop took %.2f s)\n", res.RestartS, res.StopS)
	return flushWithJSON(w0, w, res)
}
