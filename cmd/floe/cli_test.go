package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/server"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errOut, stdin: strings.NewReader(stdin)}
	code = run(t.Context(), env, args)
	return code, out.String(), errOut.String()
}

func writeLog(t *testing.T, batches int) string {
	t.Helper()
	dir := t.TempDir()
	l, err := logstore.Open(logstore.Config{Dir: dir, SegmentMaxBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range batches {
		b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw}, 0)
		for j := range 4 {
			b.Append(record.AppendOnly, fmt.Appendf(nil, "%d-%d %s", i, j, strings.Repeat("x", 500)))
		}
		batch, _ := b.Build()
		if _, err := l.Append(batch, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLogVerifyAndDump(t *testing.T) {
	dir := writeLog(t, 100)
	code, out, errOut := runCLI(t, "", "log", "verify", dir, "--output", "json")
	if code != 0 {
		t.Fatalf("verify of a healthy log: exit %d: %s", code, errOut)
	}
	var res struct {
		Segments []segmentSummary `json:"segments"`
		Problems int              `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Problems != 0 || len(res.Segments) < 2 || res.Segments[len(res.Segments)-1].NextOffset != 400 {
		t.Fatalf("verify: %+v", res)
	}

	code, out, _ = runCLI(t, "", "log", "dump", dir, "--from", "10", "--limit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("dump: exit %d, %d lines", code, len(lines))
	}
	var first batchLine
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.BaseOffset != 8 || !first.CRCValid || first.Epoch != 1 {
		t.Fatalf("first dumped batch: %+v %v", first, err)
	}
	if _, jsonOut, _ := runCLI(t, "", "log", "dump", dir, "--from", "10", "--limit", "3", "-o", "json"); jsonOut != out {
		t.Fatalf("dump -o json differs from dump:\n%s\n%s", jsonOut, out)
	}
	code, out, _ = runCLI(t, "", "log", "dump", dir, "--from", "10", "--limit", "3", "-o", "text")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "SEGMENT") || strings.Fields(lines[1])[2] != "8" {
		t.Fatalf("dump -o text: exit %d\n%s", code, out)
	}

	// Damage a byte in the middle of the first segment: verify fails and says where.
	seg := filepath.Join(dir, fmt.Sprintf("%020d.log", 0))
	data, _ := os.ReadFile(seg)
	data[len(data)/2] ^= 0xff
	os.WriteFile(seg, data, 0o644)
	code, out, _ = runCLI(t, "", "log", "verify", dir)
	if code != 1 || !strings.Contains(out, "bad CRC") {
		t.Fatalf("verify of a damaged log: exit %d\n%s", code, out)
	}
}

func TestSchemaCommands(t *testing.T) {
	code, out, _ := runCLI(t, "", "schema", "check", "id BIGINT NOT NULL, v STRING", "--primary-key", "id")
	if code != 0 || strings.TrimSpace(out) != "id BIGINT NOT NULL PRIMARY KEY, v STRING" {
		t.Fatalf("check: %d %q", code, out)
	}
	code, _, errOut := runCLI(t, "", "schema", "check", "id BIGINT, v STRING", "--primary-key", "id")
	if code != 1 || !strings.Contains(errOut, "NOT NULL") {
		t.Fatalf("nullable key: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "schema", "check", "id BIGINTEGER")
	if code != 1 || !strings.Contains(errOut, "BIGINTEGER") {
		t.Fatalf("unknown type: %d %q", code, errOut)
	}
	code, out, errOut = runCLI(t, "{\"id\":1}\n{\"id\":\"x\"}\n", "schema", "rows", "id INT NOT NULL")
	if code != 1 || out != "{\"id\":1}\n" || !strings.Contains(errOut, "line 2") || !strings.Contains(errOut, `column "id"`) {
		t.Fatalf("rows: %d %q %q", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "", "nope"); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

// TestServerAddressIsUsage: a --server that cannot be an address (a bare
// port, a URL, a port out of range) is a usage error (exit 2) found before
// anything is dialed.
func TestServerAddressIsUsage(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"7795", "is not host:port"},
		{"http://127.0.0.1:7700", "without a scheme"},
		{"127.0.0.1:99999", "not a number from 1 to 65535"},
		{"127.0.0.1:7700,localhost", "is not host:port"},
		{" , ", "--server is empty"},
	} {
		code, _, errOut := runCLI(t, "", "db", "list", "--server", tc.addr)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("--server %q: exit %d, %q; want exit 2 and %q", tc.addr, code, errOut, tc.want)
		}
	}
}

// TestUnreachableServerFailsFast: with nothing listening at --server, a
// command fails with the dial error in about a second, not after its
// whole --timeout.
func TestUnreachableServerFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	code, _, errOut := runCLI(t, "", "db", "list", "--server", addr, "--timeout", "30s")
	if code != 1 || !strings.Contains(errOut, "connection refused") || strings.Contains(errOut, "deadline") {
		t.Fatalf("db list against nothing: exit %d, %q", code, errOut)
	}
}

// TestHTTPPortIsNotAFloeNode: --server pointed at a node's own --http
// port (an HTTP server, silent while it waits for a request line) fails in
// about a second saying it is not a Floe node, not after the whole
// --timeout with "context deadline exceeded".
func TestHTTPPortIsNotAFloeNode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := l.Addr().String()
	l.Close()
	runDevArgs(t, "--data-dir", t.TempDir(), "--http", httpAddr)
	// Under the HTTP server's 5 s ReadHeaderTimeout, after which it
	// answers (and the answer shows it is not a Floe node).
	code, _, errOut := runCLI(t, "", "db", "list", "--server", httpAddr, "--timeout", "4s")
	if code != 1 || !strings.Contains(errOut, httpAddr+" is not a Floe node") || strings.Contains(errOut, "deadline") {
		t.Fatalf("db list against the --http port: exit %d, %q", code, errOut)
	}
}

// TestUsageFoundBeforeConnecting: flag and argument mistakes are usage
// errors (exit 2) found before any server is asked; --server points where
// nothing listens, so a command that connected first would fail with a
// dial error instead.
func TestUsageFoundBeforeConnecting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consume", "db.t", "--from", "bogus"}, `--from "bogus": want earliest, earliest-in-log, latest`},
		{[]string{"consume", "db.t", "--buckets", "x"}, `--buckets: "x" is not a bucket number`},
		{[]string{"consume", "dbt"}, `"dbt" is not DB.TABLE`},
		{[]string{"produce", "db.t", "--acks", "7"}, `invalid argument "7" for "--acks" flag: must be all, 1 or 0`},
		{[]string{"produce", "db.t", "--file", filepath.Join(t.TempDir(), "missing.json")}, "not a readable file"},
		{[]string{"produce", "db.t", "--delete", "--columns", "a"}, "--delete and --columns exclude each other"},
		{[]string{"lookup", "db.t", "--key", "{}", "--prefix", "{}"}, "--key and --prefix exclude each other"},
		{[]string{"table", "export", "db.t", "--snapshot", "--from", "latest"}, "--from is for logs"},
		{[]string{"table", "export", "db.t", "--buckets", "-1"}, `--buckets: "-1" is not a bucket number`},
		{[]string{"table", "import", "db.t"}, "--file is required"},
		{[]string{"table", "import", "db.t", "--file", "-", "--concurrency", "0"}, "--concurrency must be from 1 to 64"},
		// 0 is not taken as 1, nor as the default a left-out flag means.
		{[]string{"table", "create", "db.t", "--schema", "id INT", "--buckets", "0"}, `invalid argument "0" for "--buckets" flag: must be a number from 1 to 4096`},
		{[]string{"table", "create", "db.t", "--schema", "id INT", "--buckets", "4097"}, `invalid argument "4097" for "--buckets" flag: must be a number from 1 to 4096`},
		{[]string{"table", "create", "db.t", "--schema", "id INT", "--replication", "0"}, `invalid argument "0" for "--replication" flag: must be a number of at least 1`},
		// Every invalid name is a usage mistake, whichever command names it.
		{[]string{"db", "create", "café"}, `invalid database name "café": use 1 to 200 ASCII letters, digits or underscores`},
		{[]string{"db", "drop", "a-b", "--if-exists"}, `invalid database name "a-b"`},
		{[]string{"table", "list", "x y"}, `invalid database name "x y"`},
		{[]string{"table", "create", "t.a/b", "--schema", "id INT"}, `invalid table name "a/b": use 1 to 200 ASCII letters`},
		{[]string{"table", "describe", "t.a/b"}, `invalid table name "a/b"`},
		{[]string{"table", "drop", "t.a/b", "--if-exists"}, `invalid table name "a/b"`},
		{[]string{"table", "describe", "../t"}, `"../t" is not DB.TABLE`},
		{[]string{"consume", "d-b.t"}, `invalid database name "d-b"`},
		{[]string{"lookup", "db.t!", "--key", "{}"}, `invalid table name "t!"`},
	} {
		code, _, errOut := runCLI(t, "", append(tc.args, "--server", "127.0.0.1:1")...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "connection refused") {
			t.Errorf("floe %s: exit %d, %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // RFC 3339 in UTC, "" for an error
	}{
		{"2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z"},
		{"2026-12-01T10:00:00.250+01:00", "2026-12-01T09:00:00.25Z"},
		{"2026-12-01T10:00:00", "2026-12-01T10:00:00Z"},
		{"2026-12-01 10:00:00", "2026-12-01T10:00:00Z"},
		{"2026-12-01", "2026-12-01T00:00:00Z"},
		{"1796097953841", "2026-12-01T04:05:53.841Z"},
		{"-5", ""},
		{"yesterday", ""},
	} {
		got, err := parseTimestamp(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseTimestamp(%q) = %v, want an error", tc.in, got)
		case tc.want != "" && (err != nil || got.UTC().Format(time.RFC3339Nano) != tc.want):
			t.Errorf("parseTimestamp(%q) = %v, %v; want %s", tc.in, got.UTC().Format(time.RFC3339Nano), err, tc.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	code, out, _ := runCLI(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "floe ") {
		t.Fatalf("floe --version: %d %q", code, out)
	}
}

// TestCLIMessages: errors of every library that reach the terminal print
// without the Go package names their texts open with for logs ("client: "),
// and without a phrase the wrapping said twice. Each error is a real one of
// its library, wrapped as the commands wrap them.
func TestCLIMessages(t *testing.T) {
	_, recordErr := record.ParseSchema("id NOPE")
	_, _, clientErr := client.SplitTableName("nodot")
	_, tablepropErr := tableprop.Parse(map[string]string{"no.such.property": "1"}, tableprop.Table{Replication: 1, Checks: 1})
	_, logstoreErr := logstore.ListSegments(filepath.Join(t.TempDir(), "missing"))
	// A server's error reaches the CLI over the wire, as a *transport.Error.
	wireErr := transport.FromWire(transport.ToWire(fmt.Errorf("read bucket 3: %w", logstore.ErrOffsetOutOfRange)))
	// A node's own configuration errors reach `floe serve` directly.
	serverErr := (&server.Config{}).Validate()
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	_, tieringErr := tiering.NewFolder(filepath.Join(notDir, "remote"))
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"client", fmt.Errorf("rows not all written: %w", errors.Join(
			fmt.Errorf("close append writer: %w", context.DeadlineExceeded), fmt.Errorf("%w: batch", client.ErrWriterClosed))),
			"rows not all written: close append writer: context deadline exceeded\nwriter closed: batch"},
		{"client parse", clientErr, strings.TrimPrefix(clientErr.Error(), "client: ")},
		{"record", fmt.Errorf("line 3: %w", recordErr), "line 3: " + strings.TrimPrefix(recordErr.Error(), "record: ")},
		{"tableprop", tablepropErr, strings.TrimPrefix(tablepropErr.Error(), "tableprop: ")},
		{"logstore", logstoreErr, strings.TrimPrefix(logstoreErr.Error(), "logstore: ")},
		{"kvstore", fmt.Errorf("upsert: %w", kvstore.ErrDeleteDisabled), "upsert: deletes are disabled for this table"},
		{"transport", wireErr, "internal error: read bucket 3: offset out of range"},
		{"server", serverErr, strings.TrimPrefix(serverErr.Error(), "server: ")},
		{"tiering", tieringErr, strings.TrimPrefix(tieringErr.Error(), "tiering: ")},
		{"repeated phrase", fmt.Errorf("corrupt data: %w", fmt.Errorf("corrupt data: %w", logstore.ErrCorrupt)), "corrupt data: corrupt log"},
	} {
		got := cliMessage(tc.err)
		if got != tc.want {
			t.Errorf("%s: cliMessage(%q)\n got %q\nwant %q", tc.name, tc.err, got, tc.want)
		}
		for _, pkg := range []string{"client", "record", "tableprop", "logstore", "transport", "kvstore", "metastate", "raftmeta", "server", "tiering"} {
			if strings.Contains(got, pkg+": ") {
				t.Errorf("%s: %q names the Go package %s", tc.name, got, pkg)
			}
		}
	}
}

// TestErrorNamesTheCommandOnce: the command's name opens the message once.
func TestErrorNamesTheCommandOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	code, _, errOut := runCLI(t, "", "recover", "--data-dir", dir, "--id", "1", "--voters", "1=127.0.0.1:7700")
	if code != 1 || errOut != "floe recover: no data folder at "+dir+"\n" {
		t.Fatalf("recover of a missing folder: exit %d, %q", code, errOut)
	}
}
