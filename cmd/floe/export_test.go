package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// writeInput writes the lines of an import to a file of the test's.
func writeInput(t *testing.T, lines string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readOutput reads a file an export wrote.
func readOutput(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustRun runs a command line that must succeed and returns its stdout and
// stderr.
func (fc *testCluster) mustRun(stdin string, args ...string) (stdout, stderr string) {
	fc.t.Helper()
	code, out, errOut := runCLI(fc.t, stdin, append(args, "--server", fc.server)...)
	if code != 0 {
		fc.t.Fatalf("floe %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out, errOut
}

// TestExportLog: the export of a log table holds every committed record of
// every bucket once, with its bucket and offset, each bucket's in offset
// order, the same lines on stdout and in a file; --buckets and --from
// narrow it.
func TestExportLog(t *testing.T) {
	fc, table := startLogTable(t, 3, 1)
	fc.mustRun(jsonRows(0, 500), "produce", table)
	fc.mustRun(jsonRows(500, 700), "produce", table)
	file := filepath.Join(t.TempDir(), "out.jsonl")
	stdout, summary := fc.mustRun("", "table", "export", table, "--file", file, "--concurrency", "2")
	if stdout != "" || !strings.HasPrefix(summary, "exported 700 records of "+table+" from 3 buckets, ") {
		t.Fatalf("stdout %q, summary %q", stdout, summary)
	}
	out := readOutput(t, file)
	if onStdout, _ := fc.mustRun("", "table", "export", table); !sameLines(onStdout, out) {
		t.Fatal("the export to stdout differs from the one to a file")
	}
	recs := parseConsumed(t, out)
	schema, err := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	if err != nil {
		t.Fatal(err)
	}
	// Per bucket, the lines are the bucket's records, in order.
	for b := range int32(3) {
		stored, err := fc.Records(t.Context(), fc.db, "t", b)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, r := range stored {
			if !r.Control {
				want = append(want, fmt.Sprintf("%d@%d", record.NewRowView(schema, r.Row).Int64(0), r.Offset))
			}
		}
		for _, r := range recs {
			if r.Bucket == b {
				got = append(got, fmt.Sprintf("%d@%d", r.ID, r.Offset))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("bucket %d: exported %v\nstored %v", b, got, want)
		}
	}
	seen := map[int64]bool{}
	for _, r := range recs {
		if seen[r.ID] || r.Name != fmt.Sprintf("row %d", r.ID) {
			t.Fatalf("record %+v repeated or wrong", r)
		}
		seen[r.ID] = true
	}
	if len(seen) != 700 {
		t.Fatalf("%d records exported, want 700", len(seen))
	}

	narrow, _ := fc.mustRun("", "table", "export", table, "--buckets", "0,2", "--from", "offset=3")
	var n int
	for _, r := range parseConsumed(t, narrow) {
		if r.Bucket == 1 || r.Offset < 3 {
			t.Fatalf("--buckets 0,2 --from offset=3 exported %+v", r)
		}
		n++
	}
	var want int
	for _, r := range recs {
		if r.Bucket != 1 && r.Offset >= 3 {
			want++
		}
	}
	if n != want {
		t.Fatalf("--buckets 0,2 --from offset=3: %d records, want %d", n, want)
	}
	if latest, summary := fc.mustRun("", "table", "export", table, "--from", "latest"); latest != "" || !strings.Contains(summary, "exported 0 records") {
		t.Fatalf("--from latest: %q, %q", latest, summary)
	}
}

// sameLines reports whether a and b hold the same lines, in any order
// (buckets read in parallel interleave).
func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

// TestExportSnapshot: --snapshot writes a primary-key table's current rows
// after upserts, partial updates and deletes, as floe lookup prints them;
// without it, the changelog.
func TestExportSnapshot(t *testing.T) {
	fc := kvTables(t)
	kv := fc.db + ".kv"
	var upserts strings.Builder
	want := map[int]string{}
	for i := range 300 {
		fmt.Fprintf(&upserts, "{\"id\":%d,\"name\":\"n%d\",\"score\":%d}\n", i, i, i)
		want[i] = fmt.Sprintf(`{"id":%d,"name":"n%d","score":%d}`, i, i, i)
	}
	fc.mustRun(upserts.String(), "produce", kv)
	fc.mustRun("{\"id\":1,\"name\":\"again\"}\n", "produce", kv)
	want[1] = `{"id":1,"name":"again","score":null}`
	fc.mustRun("{\"id\":2,\"score\":-2}\n", "produce", kv, "--columns", "score")
	want[2] = `{"id":2,"name":"n2","score":-2}`
	var deletes strings.Builder
	for i := 10; i < 300; i += 10 {
		fmt.Fprintf(&deletes, "{\"id\":%d}\n", i)
		delete(want, i)
	}
	fc.mustRun(deletes.String(), "produce", kv, "--delete")

	out, summary := fc.mustRun("", "table", "export", kv, "--snapshot")
	var wantLines []string
	for _, l := range want {
		wantLines = append(wantLines, l)
	}
	if !sameLines(strings.TrimSuffix(out, "\n"), strings.Join(wantLines, "\n")) {
		t.Fatalf("snapshot:\n%s", out)
	}
	if !strings.HasPrefix(summary, fmt.Sprintf("exported %d rows of %s from 3 buckets", len(want), kv)) {
		t.Fatalf("summary %q", summary)
	}
	_, summary = fc.mustRun("", "table", "export", kv, "--snapshot", "-o", "json")
	var res map[string]any
	if err := json.Unmarshal([]byte(summary), &res); err != nil || res["rows"] != float64(len(want)) || res["what"] != "rows" {
		t.Fatalf("json summary %q: %v", summary, err)
	}

	changelog, _ := fc.mustRun("", "table", "export", kv)
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(changelog), "\n") {
		var r struct {
			Change string `json:"_change"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		counts[r.Change]++
	}
	if counts["+I"] != 300 || counts["-U"] != 2 || counts["+U"] != 2 || counts["-D"] != 29 {
		t.Fatalf("changelog changes %v", counts)
	}
}

// TestExportRefusals: an unknown table, --snapshot of a log table, bad
// flags; a failed export leaves no file.
func TestExportRefusals(t *testing.T) {
	fc := kvTables(t)
	file := filepath.Join(t.TempDir(), "out.jsonl")
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"table", "export", fc.db + ".nope", "--file", file}, 1, `table "` + fc.db + `.nope" does not exist`},
		{[]string{"table", "export", fc.db + ".t", "--snapshot"}, 2, "--snapshot needs a primary-key table"},
		{[]string{"table", "export", fc.db + ".kv", "--buckets", "3"}, 2, "has buckets 0 to 2, not 3"},
		{[]string{"table", "export", fc.db + ".kv", "--snapshot", "--from", "latest"}, 2, "--from is for logs"},
		{[]string{"table", "export", fc.db + ".kv", "--concurrency", "0"}, 2, "--concurrency must be"},
	} {
		code, out, errOut := runCLI(t, "", append(tc.args, "--server", fc.server)...)
		if code != tc.wantCode || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("floe %s: exit %d, %q, %q; want %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.wantCode, tc.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 0 {
		t.Fatalf("failed exports left %v", entries)
	}
}
