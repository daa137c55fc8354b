package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// PartitionsOptions are the options of bench partitions.
type PartitionsOptions struct {
	// Table is DB.TABLE, created partitioned by day (PartitionsSchema);
	// it must not exist.
	Table string
	// Partitions of Buckets buckets each, at Replication.
	Partitions, Buckets, Replication int
	// Idle is the window over which the nodes' CPU is measured once every
	// partition serves.
	Idle time.Duration
	// NodePIDs are the nodes' process ids, for their CPU time, memory and
	// descriptors (nil: not measured).
	NodePIDs []int
	// Timeout bounds each call and the wait for the buckets to serve.
	Timeout time.Duration
	// Connect makes the new consumer's client, as the benchmark's own was
	// made.
	Connect func(ctx context.Context) (*client.Client, error)
}

// PartitionsSchema is the schema of the table bench partitions creates.
const PartitionsSchema = "dt STRING NOT NULL, id BIGINT NOT NULL, payload STRING"

// PartitionsResult is what bench partitions measured.
type PartitionsResult struct {
	Mode        string `json:"mode"`
	Partitions  int    `json:"partitions"`
	Buckets     int    `json:"buckets_per_partition"`
	Replication int    `json:"replication"`
	// CreateMs are the latencies of the partitions' creates, one at a
	// time, in milliseconds; ServeS the time from the first create until
	// every bucket of every partition answers a ListOffset.
	CreateP50Ms float64 `json:"create_p50_ms"`
	CreateP99Ms float64 `json:"create_p99_ms"`
	CreateMaxMs float64 `json:"create_max_ms"`
	ServeS      float64 `json:"serve_s"`
	// TableCreateMs is the create of an unpartitioned table of the same
	// buckets before the partitions exist, and after: what the
	// partitions' metadata costs other DDL.
	TableCreateBeforeMs float64 `json:"table_create_before_ms"`
	TableCreateAfterMs  float64 `json:"table_create_after_ms"`
	// ListMs is ListPartitions with every partition; DescribeMs
	// DescribeTable of the partitioned table.
	ListMs     float64 `json:"list_partitions_ms"`
	DescribeMs float64 `json:"describe_ms"`
	// ConsumerStartMs is a new consumer of the newest partition, from
	// opening the table to the first record of it.
	ConsumerStartMs float64 `json:"consumer_start_ms"`
	// Per node (with NodePIDs): CPU over the idle window in percent of one
	// core, resident memory and open descriptors after it.
	IdleS          float64   `json:"idle_s"`
	IdleCPUPercent []float64 `json:"idle_cpu_percent,omitempty"`
	RSSBytes       []int64   `json:"rss_bytes,omitempty"`
	FDs            []int     `json:"fds,omitempty"`
}

// Partitions creates a table partitioned by day and its partitions one
// by one, waits until they all serve, and measures DDL beside them, a new
// consumer of the newest partition, and the nodes idle.
func Partitions(ctx context.Context, c *client.Client, o *PartitionsOptions, progress io.Writer) (PartitionsResult, error) {
	res := PartitionsResult{Mode: "partitions", Partitions: o.Partitions, Buckets: o.Buckets, Replication: o.Replication, IdleS: o.Idle.Seconds()}
	db, name, err := client.SplitTableName(o.Table)
	if err != nil {
		return res, err
	}
	call := func(fn func(ctx context.Context) error) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		start := time.Now()
		err := fn(cctx)
		return time.Since(start), err
	}
	admin := c.Admin()
	if _, err := call(func(ctx context.Context) error { return admin.CreateDatabase(ctx, db, client.IfNotExists()) }); err != nil {
		return res, err
	}
	plain := client.TableSpec{Database: db, Schema: PartitionsSchema, Buckets: int32(o.Buckets), Replication: int32(o.Replication)}
	d, err := call(func(ctx context.Context) error {
		spec := plain
		spec.Name = name + "_before"
		_, err := admin.CreateTable(ctx, spec)
		return err
	})
	if err != nil {
		return res, err
	}
	res.TableCreateBeforeMs = ms(d)
	spec := plain
	spec.Name, spec.PartitionKeys = name, []string{"dt"}
	spec.Properties = map[string]string{"partition.dynamic-create": "false"}
	if _, err := call(func(ctx context.Context) error { _, err := admin.CreateTable(ctx, spec); return err }); err != nil {
		return res, err
	}
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := make([]string, o.Partitions)
	creates := make([]time.Duration, o.Partitions)
	start := time.Now()
	for i := range o.Partitions {
		names[i] = "dt=" + first.AddDate(0, 0, i).Format(time.DateOnly)
		if creates[i], err = call(func(ctx context.Context) error {
			_, err := admin.CreatePartition(ctx, db, name, names[i])
			return err
		}); err != nil {
			return res, fmt.Errorf("create partition %s: %w", names[i], err)
		}
		if (i+1)%50 == 0 {
			fmt.Fprintf(progress, "created %d of %d partitions\n", i+1, o.Partitions)
		}
	}
	slices.Sort(creates)
	res.CreateP50Ms, res.CreateP99Ms, res.CreateMaxMs = ms(creates[len(creates)/2]), ms(creates[len(creates)*99/100]), ms(creates[len(creates)-1])
	tbl, err := c.Table(ctx, db, name)
	if err != nil {
		return res, err
	}
	if err := waitPartitionsServe(ctx, tbl, names, o.Timeout); err != nil {
		return res, err
	}
	res.ServeS = time.Since(start).Seconds()
	if d, err = call(func(ctx context.Context) error {
		spec := plain
		spec.Name = name + "_after"
		_, err := admin.CreateTable(ctx, spec)
		return err
	}); err != nil {
		return res, err
	}
	res.TableCreateAfterMs = ms(d)
	if d, err = call(func(ctx context.Context) error { _, err := admin.ListPartitions(ctx, db, name); return err }); err != nil {
		return res, err
	}
	res.ListMs = ms(d)
	if d, err = call(func(ctx context.Context) error { _, err := admin.DescribeTable(ctx, db, name); return err }); err != nil {
		return res, err
	}
	res.DescribeMs = ms(d)
	newest := names[len(names)-1]
	if res.ConsumerStartMs, err = consumerStart(ctx, c, o.Connect, db, name, newest, o.Timeout); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "every partition serves; measuring the nodes idle for %v\n", o.Idle)
	if len(o.NodePIDs) > 0 {
		before := make([]float64, len(o.NodePIDs))
		for i, pid := range o.NodePIDs {
			if before[i], err = procCPUSeconds(pid); err != nil {
				return res, err
			}
		}
		idleStart := time.Now()
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(o.Idle):
		}
		elapsed := time.Since(idleStart).Seconds()
		for i, pid := range o.NodePIDs {
			after, err := procCPUSeconds(pid)
			if err != nil {
				return res, err
			}
			res.IdleCPUPercent = append(res.IdleCPUPercent, 100*(after-before[i])/elapsed)
			rss, _ := procRSSBytes(pid)
			fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
			res.RSSBytes, res.FDs = append(res.RSSBytes, rss), append(res.FDs, len(fds))
		}
	}
	return res, nil
}

// waitPartitionsServe waits until every bucket of every partition named
// answers a ListOffset.
func waitPartitionsServe(ctx context.Context, tbl *client.Table, names []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, n := range names {
		p, err := tbl.Partition(ctx, n)
		if err != nil {
			return err
		}
		for b := range p.Buckets() {
			for {
				_, err := p.ListOffset(ctx, b, client.Latest())
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return fmt.Errorf("partition %s bucket %d does not serve: %w", n, b, err)
				}
				_ = p.Refresh(ctx)
				time.Sleep(densityPollInterval)
			}
		}
	}
	return nil
}

// consumerStart writes one row to a partition, then times a new consumer
// of it: opening the table, the partition, subscribing every bucket from
// the start, and polling until the row comes.
func consumerStart(ctx context.Context, c *client.Client, connect func(context.Context) (*client.Client, error), db, name, partition string,
	timeout time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tbl, err := c.Table(ctx, db, name)
	if err != nil {
		return 0, err
	}
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		return 0, err
	}
	defer w.Close(ctx)
	e := tbl.NewRowEncoder()
	e.SetString(0, partition[len("dt="):])
	e.SetInt64(1, 1)
	e.SetString(2, "first")
	row, err := e.Finish(nil)
	if err != nil {
		return 0, err
	}
	if _, err := w.Append(ctx, row); err != nil {
		return 0, err
	}
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	c2, err := connect(ctx)
	if err != nil {
		return 0, err
	}
	defer c2.Close()
	t2, err := c2.Table(ctx, db, name)
	if err != nil {
		return 0, err
	}
	s, err := t2.NewLogScanner(client.LogScannerOptions{})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	for b := range t2.Buckets() {
		if err := s.SubscribePartition(ctx, partition, b, client.Earliest()); err != nil {
			return 0, err
		}
	}
	for {
		recs, err := s.Poll(ctx)
		if err != nil {
			return 0, err
		}
		if len(recs) > 0 {
			return ms(time.Since(start)), nil
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PrintPartitionsResult prints bench partitions' result as a table, then as
// a JSON line.
func PrintPartitionsResult(out io.Writer, res PartitionsResult) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "floe bench partitions: %d partitions of %d buckets, replication %d\n", res.Partitions, res.Buckets, res.Replication)
	fmt.Fprintf(w, "partition create (ms)\tp50 %.1f\tp99 %.1f\tmax %.1f\n", res.CreateP50Ms, res.CreateP99Ms, res.CreateMaxMs)
	fmt.Fprintf(w, "all serving\t%.1f s\n", res.ServeS)
	fmt.Fprintf(w, "table create (ms)\tbefore %.1f\tafter %.1f\n", res.TableCreateBeforeMs, res.TableCreateAfterMs)
	fmt.Fprintf(w, "list partitions\t%.1f ms\tdescribe %.1f ms\n", res.ListMs, res.DescribeMs)
	fmt.Fprintf(w, "consumer of the newest partition\t%.1f ms to its first record\n", res.ConsumerStartMs)
	for i, cpu := range res.IdleCPUPercent {
		fmt.Fprintf(w, "node %d idle\t%.2f%% of a core\t%.0f MiB\t%d fds\n", i+1, cpu, float64(res.RSSBytes[i])/(1<<20), res.FDs[i])
	}
	return flushWithJSON(out, w, res)
}
