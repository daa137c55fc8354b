package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/bench"
)

func benchConsumeCmd(env *cliEnv) clientCmd {
	var o bench.ConsumeOptions
	var columns, format, compression, cpuProfile string
	var buckets int
	props := propertyFlag{}
	return clientCmd{summary: "read throughput of a 20-column log table, all columns or some (projection pushdown)", streaming: true,
		usage: "bench consume [--table DB.TABLE] [--records 1000000] [--columns a,b] [--log-format arrow|row] [--compression zstd|lz4|none] [--buckets N] [--property k=v]...",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Table, "table", "bench.clicks", "DB.TABLE to read; created with the clickstream schema (20 columns of web analytics events) if missing")
			fs.Int64Var(&o.Records, "records", 1_000_000, "fill the table with generated events until it holds this many, before the timed read")
			fs.StringVar(&columns, "columns", "", "comma-separated columns to read (default: all), e.g. user_id,event_time")
			fs.StringVar(&format, "log-format", "", "log.format of a table the benchmark creates: arrow or row (default: the cluster's, arrow)")
			fs.StringVar(&compression, "compression", "", "log.compression of a table the benchmark creates: zstd, lz4 or none (default zstd)")
			fs.IntVar(&buckets, "buckets", 0, "buckets of a table the benchmark creates (0: the cluster's default)")
			fs.Var(props, "property", "a table property of a table the benchmark creates, key=value (repeatable): datalake.enabled=true with a short log.ttl reads the lake's files, then the log")
			fs.IntVar(&o.MaxBytes, "max-bytes", 0, "the scanner's fetch size in bytes (0: its default, 4 MiB)")
			fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this client's timed read to the file (go tool pprof)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			switch {
			case o.Records <= 0 || o.Records > 1e12:
				return fmt.Errorf("%w: --records must be in [1, 1e12]", errUsage)
			case buckets < 0:
				return fmt.Errorf("%w: --buckets must not be negative", errUsage)
			case o.MaxBytes < 0:
				return fmt.Errorf("%w: --max-bytes must not be negative", errUsage)
			}
			o.Buckets, o.Columns = int32(buckets), parseColumns(columns)
			o.Properties = map[string]string{}
			for k, v := range props {
				o.Properties[k] = v
			}
			if format != "" {
				o.Properties["log.format"] = format
			}
			if compression != "" {
				o.Properties["log.compression"] = compression
			}
			tbl, err := openBenchTable(o.Table, func() (*client.Table, error) { return bench.OpenClickTable(ctx, c, &o, cf.timeout) })
			if err != nil {
				return err
			}
			if err := bench.Fill(ctx, tbl, &o, cf.timeout, func(done, total int64) {
				fmt.Fprintf(env.stderr, "filling %s: %d of %d events\n", o.Table, done, total)
			}); err != nil {
				return fmt.Errorf("fill %s: %w", o.Table, err)
			}
			stop, err := (&benchFlags{cpuProfile: cpuProfile}).startProfile()
			if err != nil {
				return err
			}
			res, err := bench.Consume(ctx, tbl, &o, cf.timeout)
			stop()
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench consume: %s from the start to the high watermark", o.Table)
			return bench.PrintConsume(env.stdout, title, res, cf.output == "json")
		}}
}
