package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/cmd/floe/internal/bench"
	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/tiering"
)

// The package's tests share one two-node cluster of real nodes; each test
// makes its tables in a database of its own.
var shared = testcluster.Shared{Options: testcluster.Options{Nodes: 2}}

func TestMain(m *testing.M) {
	if os.Getenv(bench.FloorEchoEnv) != "" {
		// bench floor's echo child (TestBenchFloor runs this binary as it).
		if err := bench.RunFloorEcho(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// KV snapshots need remote storage; the tiering rounds themselves
	// (an hour apart) never run in a test.
	remoteDir, err := os.MkdirTemp("", "floe-cli-remote-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if shared.Options.Remote, err = tiering.NewFolder(remoteDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared.Options.TieringInterval = time.Hour
	code := m.Run()
	os.RemoveAll(remoteDir)
	if err := shared.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the test cluster:", err)
	}
	os.Exit(code)
}

// testCluster is the shared cluster as one test sees it.
type testCluster struct {
	*testcluster.Cluster
	t      *testing.T
	db     string // the test's database
	server string // --server for the CLI
}

// startCluster returns the shared cluster, started on first use.
func startCluster(t *testing.T) *testCluster {
	t.Helper()
	c, err := shared.Cluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &testCluster{Cluster: c, t: t, db: testcluster.NameFor(t.Name()), server: strings.Join(c.Addrs(), ",")}
}

// createTable creates a table in the test's database and returns its
// name for the CLI, database.name.
func (fc *testCluster) createTable(name, schema string, buckets, replication int32, bucketKey ...string) string {
	fc.t.Helper()
	_, err := fc.CreateTable(fc.t.Context(), testcluster.TableSpec{Database: fc.db, Name: name, Schema: schema,
		Buckets: buckets, BucketKey: bucketKey, Replication: replication})
	if err != nil {
		fc.t.Fatal(err)
	}
	return fc.db + "." + name
}

// startLogTable starts the shared cluster with log table t.
func startLogTable(t *testing.T, buckets, replication int32) (fc *testCluster, table string) {
	t.Helper()
	fc = startCluster(t)
	return fc, fc.createTable("t", "id BIGINT NOT NULL, name STRING", buckets, replication)
}

func jsonRows(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "{\"id\":%d,\"name\":\"row %d\"}\n", i, i)
	}
	return b.String()
}

// consumed is one line of floe consume.
type consumed struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Bucket    int32  `json:"_bucket"`
	Offset    int64  `json:"_offset"`
	Timestamp string `json:"_timestamp"`
}

func parseConsumed(t *testing.T, out string) []consumed {
	t.Helper()
	var recs []consumed
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r consumed
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestProduceAndConsume(t *testing.T) {
	fc, table := startLogTable(t, 3, 1)
	server := fc.server
	in := jsonRows(0, 30) + "{\"id\":\"thirty\"}\n" + jsonRows(31, 40)
	code, _, errOut := runCLI(t, in, "produce", table, "--server", server)
	if code != 1 || !strings.Contains(errOut, `line 31: column "id"`) || !strings.Contains(errOut, "produced 30 rows") {
		t.Fatalf("produce with a bad line 31: exit %d, stderr %q", code, errOut)
	}
	var stored int
	for b := range int32(3) {
		recs, err := fc.Records(t.Context(), fc.db, "t", b)
		if err != nil {
			t.Fatal(err)
		}
		stored += len(recs)
	}
	if stored != 30 {
		t.Fatalf("%d rows stored, want the 30 before the bad line", stored)
	}

	code, out, errOut := runCLI(t, "", "consume", table, "--server", server)
	if code != 0 {
		t.Fatalf("consume: exit %d: %s", code, errOut)
	}
	recs := parseConsumed(t, out)
	seen := make(map[int64]bool)
	for _, r := range recs {
		if seen[r.ID] || r.Name != fmt.Sprintf("row %d", r.ID) || len(r.Timestamp) != len("2006-01-02T15:04:05.000Z") {
			t.Fatalf("bad or repeated record %+v", r)
		}
		seen[r.ID] = true
	}
	if len(seen) != 30 {
		t.Fatalf("consumed %d rows, want 30", len(seen))
	}

	code, out, _ = runCLI(t, "", "consume", table, "--server", server, "--limit", "7")
	if got := len(parseConsumed(t, out)); code != 0 || got != 7 {
		t.Fatalf("--limit 7: exit %d, %d rows", code, got)
	}
	code, out, _ = runCLI(t, "", "consume", table, "--server", server, "--buckets", "1", "--from", "offset=2")
	for _, r := range parseConsumed(t, out) {
		if code != 0 || r.Bucket != 1 || r.Offset < 2 {
			t.Fatalf("--buckets 1 --from offset=2: exit %d, record %+v", code, r)
		}
	}
	if code, _, _ := runCLI(t, "", "consume", table, "--server", server, "--from", "yesterday"); code != 2 {
		t.Fatalf("--from yesterday: exit %d, want 2", code)
	}
}

// TestConsumeStopsAtHighWatermark: without --follow, consume prints what is
// committed when it starts, and exits.
func TestConsumeStopsAtHighWatermark(t *testing.T) {
	fc, table := startLogTable(t, 1, 2)
	server := fc.server
	if code, _, errOut := runCLI(t, jsonRows(0, 5), "produce", table, "--server", server); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	// The follower's fetches wait at the leader's door: the next rows are
	// written with acks=1 but not committed.
	leader, err := fc.WaitLeader(t.Context(), fc.db, "t", 0, func(l uint32) bool { return l != 0 })
	if err != nil {
		t.Fatal(err)
	}
	release := fc.Node(leader).Proxy().Hold(testcluster.RPCFetch, testcluster.FromNodes)
	defer release()
	if code, _, errOut := runCLI(t, jsonRows(5, 10), "produce", table, "--server", server, "--acks", "1"); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	code, out, errOut := runCLI(t, "", "consume", table, "--server", server)
	if code != 0 {
		t.Fatalf("consume: exit %d: %s", code, errOut)
	}
	recs := parseConsumed(t, out)
	if len(recs) != 5 {
		t.Fatalf("consumed %d rows, want the 5 below the high watermark", len(recs))
	}
	for i, r := range recs {
		if r.ID != int64(i) || r.Offset != int64(i) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}

// TestProduceAcksNoneIsConsumed (issue 30): rows produced with --acks 0
// reach consumers once they are durable on the in-sync replicas, as any
// other rows do; before, the high watermark stayed where it was until a
// later acks=1 or acks=all write moved it, and consume printed nothing.
func TestProduceAcksNoneIsConsumed(t *testing.T) {
	fc := startCluster(t)
	for _, replication := range []int32{1, 2} {
		t.Run(fmt.Sprintf("replication %d", replication), func(t *testing.T) {
			table := fc.createTable(fmt.Sprintf("r%d", replication), "id BIGINT NOT NULL, name STRING", 2, replication)
			if code, _, errOut := runCLI(t, jsonRows(0, 20), "produce", table, "--server", fc.server, "--acks", "0"); code != 0 {
				t.Fatalf("produce --acks 0: exit %d: %s", code, errOut)
			}
			// The rows commit after produce returns: follow until all 20
			// came, or give up (an interrupt ends consume cleanly).
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var out, errOut strings.Builder
			env := &cliEnv{stdout: &out, stderr: &errOut, stdin: strings.NewReader("")}
			code := run(ctx, env, []string{"consume", table, "--server", fc.server, "--follow", "--limit", "20"})
			recs := parseConsumed(t, out.String())
			if code != 0 || len(recs) != 20 {
				t.Fatalf("consume --follow --limit 20: exit %d, %d rows within 20 s (stderr %q): acks=0 rows did not commit",
					code, len(recs), errOut.String())
			}
		})
	}
}

// TestBenchSmoke runs both benchmarks briefly against the cluster and reads
// the JSON result on their last line. Each run lasts long enough for a
// writer's first batch, which waits for a writer id committed through the
// metadata Raft group (over 100 ms on a loaded CI machine), and no longer:
// the runs take the whole machine from the tests of other packages.
func TestBenchSmoke(t *testing.T) {
	server := startCluster(t).server
	for _, args := range [][]string{
		{"bench", "produce", "--duration", "500ms", "--record-bytes", "64", "--concurrency", "2"},
		{"bench", "produce", "--duration", "500ms", "--record-bytes", "64", "--batching", "--acks", "1"},
		{"bench", "produce", "--duration", "500ms", "--batch", "10", "--table", "bench.other"},
		{"bench", "e2e", "--duration", "500ms", "--rate", "2000", "--record-bytes", "16"},
		{"bench", "produce", "--duration", "500ms", "--record-bytes", "64", "-o", "json"},
		{"bench", "produce", "--duration", "500ms", "--record-bytes", "64", "--batching", "--partitions", "3", "--table", "bench.hourly"},
		{"bench", "produce", "--duration", "500ms", "--record-bytes", "64", "--batching", "--partitions", "3", "--unpartitioned", "--table", "bench.flat"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append(args, "--server", server)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if slices.Contains(args, "json") && len(lines) != 1 {
				t.Fatalf("-o json prints more than the JSON line:\n%s", out)
			}
			var generic map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &generic); err != nil {
				t.Fatalf("last line is not JSON: %q", lines[len(lines)-1])
			}
			res := make(map[string]float64)
			for k, v := range generic {
				if f, ok := v.(float64); ok {
					res[k] = f
				}
			}
			for _, k := range []string{"ops_per_s", "mb_per_s", "p50_ms", "p99_ms", "p999_ms", "errors"} {
				if _, ok := res[k]; !ok {
					t.Fatalf("result lacks %s: %s", k, lines[len(lines)-1])
				}
			}
			if res["errors"] != 0 || res["ops_per_s"] <= 0 || res["missing"] != 0 {
				t.Fatalf("result %s", lines[len(lines)-1])
			}
			if i := slices.Index(args, "--partitions"); i > 0 {
				// The rows carry the part column either way; only the table
				// without --unpartitioned has partitions.
				table := args[slices.Index(args, "--table")+1]
				code, out, errOut := runCLI(t, "", "table", "partitions", table, "--server", server)
				switch unpartitioned := slices.Contains(args, "--unpartitioned"); {
				case unpartitioned && code == 0:
					t.Fatalf("table partitions %s of an unpartitioned table: %s", table, out)
				case !unpartitioned && (code != 0 || !strings.Contains(out, "part=2026-12-03T02")):
					t.Fatalf("table partitions %s: exit %d: %s%s", table, code, out, errOut)
				}
			}
		})
	}
}

// TestBenchSuiteSmoke: the suite runs the tests it is given, prints one
// JSON line per test in the peer kit's shape, with the CPU time per op of
// the nodes --node-pids names (here the test process, which runs the
// cluster) and of the client, and --cpuprofile profiles the client.
func TestBenchSuiteSmoke(t *testing.T) {
	server := startCluster(t).server
	profile := filepath.Join(t.TempDir(), "client.pprof")
	code, out, errOut := runCLI(t, "", "bench", "suite", "--tests", "append-1,upsert-1,lookup-128", "--duration", "500ms",
		"--keys", "200", "--record-bytes", "64", "--cpuprofile", profile, "--node-pids", strconv.Itoa(os.Getpid()), "-o", "json", "--server", server)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tests []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct {
			Kind          string  `json:"kind"`
			Test          string  `json:"test"`
			OpsPerSec     float64 `json:"ops_per_sec"`
			Errors        int     `json:"errors"`
			ServerCPUs    float64 `json:"server_cpu_s"`
			ServerCPUusOp float64 `json:"server_cpu_us_per_op"`
			ClientCPUusOp float64 `json:"client_cpu_us_per_op"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("line is not JSON: %q", line)
		}
		// The client runs in the node's process: the nodes' CPU time holds
		// the client's.
		if row.Kind != "floe" || row.OpsPerSec <= 0 || row.Errors != 0 || row.ServerCPUs <= 0 ||
			row.ClientCPUusOp <= 0 || row.ServerCPUusOp < row.ClientCPUusOp/2 {
			t.Fatalf("result %s", line)
		}
		tests = append(tests, row.Test)
	}
	if got := strings.Join(tests, ","); got != "append-1,upsert-1,lookup-128" {
		t.Fatalf("tests run: %s", got)
	}
	if st, err := os.Stat(profile); err != nil || st.Size() == 0 {
		t.Fatalf("--cpuprofile wrote no profile: %v", err)
	}
}

// TestProduceEndsWhenTheNodeStops: the node stops while produce --file
// has rows on their way (held at its proxy, so they are sent and never
// answered) and more than the writer buffers (32 MiB) still to read, so
// produce waits for room in the buffer. It ends once its --timeout has
// passed, not after the SDK's 2-minute delivery timeout, and its summary
// counts the rows sent and unanswered as of unknown outcome, not as
// failed, and the others as not written.
func TestProduceEndsWhenTheNodeStops(t *testing.T) {
	cl, err := testcluster.Start(t.Context(), testcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	nd := cl.Nodes()[0]
	if _, err := cl.CreateTable(t.Context(), testcluster.TableSpec{Database: "d", Name: "t",
		Schema: "id BIGINT NOT NULL, pad STRING", Buckets: 1, Replication: 1}); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	pad := strings.Repeat("x", 200)
	for i := range 200_000 { // 40 MB of rows
		fmt.Fprintf(&lines, "{\"id\": %d, \"pad\": %q}\n", i, pad)
	}
	file := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	release := nd.Proxy().Hold(testcluster.RPCProduce, testcluster.FromClients)
	defer release()
	exited := make(chan int, 1)
	errOut := newSyncBuffer()
	go func() {
		exited <- run(context.Background(), &cliEnv{stdout: io.Discard, stderr: errOut, stdin: strings.NewReader("")},
			[]string{"produce", "d.t", "--file", file, "--timeout", "3s", "--server", nd.Addr()})
	}()
	tick := time.NewTicker(10 * time.Millisecond) // polls the proxy's count
	defer tick.Stop()
	for nd.Proxy().Calls(testcluster.RPCProduce) == 0 {
		select {
		case code := <-exited:
			t.Fatalf("produce exited %d before a row was sent: %s", code, errOut)
		case <-t.Context().Done():
			t.Fatal("no row sent")
		case <-tick.C:
		}
	}
	if err := nd.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		out := errOut.String()
		m := regexp.MustCompile(`(\d+) rows read: 0 rows acknowledged, (\d+) rows? with unknown outcome .*, (\d+) rows? not written`).FindStringSubmatch(out)
		if code != 1 || m == nil || m[2] == "0" || m[3] == "0" || strings.Contains(out, "failed") {
			t.Fatalf("produce after the node stopped: exit %d, want 1 with unknown outcomes:\n%s", code, out)
		}
		t.Log(out)
	case <-time.After(time.Minute): // the bug: two minutes of retries
		t.Fatalf("produce --timeout 3s still running a minute after the node stopped:\n%s", errOut)
	}
}
