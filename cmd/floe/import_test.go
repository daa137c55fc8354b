package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestImportLog: an import into a log table writes every line once, in
// file order within each bucket (one sticky bucket at a time); its summary
// counts them.
func TestImportLog(t *testing.T) {
	fc, table := startLogTable(t, 3, 1)
	file := writeInput(t, jsonRows(0, 3000))
	_, summary := fc.mustRun("", "table", "import", table, "--file", file, "--concurrency", "3")
	if !strings.HasPrefix(summary, "imported 3000 rows into "+table+", ") || !strings.Contains(summary, " rows/s, ") {
		t.Fatalf("summary %q", summary)
	}
	out, _ := fc.mustRun("", "table", "export", table)
	recs := parseConsumed(t, out)
	last := map[int32]int64{0: -1, 1: -1, 2: -1}
	seen := map[int64]bool{}
	for _, r := range recs {
		if seen[r.ID] || r.ID <= last[r.Bucket] || r.Name != fmt.Sprintf("row %d", r.ID) {
			t.Fatalf("record %+v repeated, out of file order in its bucket, or wrong", r)
		}
		seen[r.ID], last[r.Bucket] = true, r.ID
	}
	if len(seen) != 3000 {
		t.Fatalf("%d rows stored, want 3000", len(seen))
	}
}

// TestImportExportRoundtrip: what an export writes, an import takes back:
// a log's records (their _bucket, _offset and _timestamp passed over), a
// primary-key table's rows (--snapshot), and its changelog, whose _change
// the import applies, giving the same rows.
func TestImportExportRoundtrip(t *testing.T) {
	fc := kvTables(t)
	fc.createTable("t2", "id BIGINT NOT NULL, name STRING", 2, 1)
	for _, name := range []string{"kv2", "kv3"} {
		fc.createTable(name, "id BIGINT NOT NULL, name STRING NOT NULL, score INT, PRIMARY KEY (id)", 2, 1)
	}
	db := fc.db + "."

	fc.mustRun(jsonRows(0, 400), "produce", db+"t")
	logOut, _ := fc.mustRun("", "table", "export", db+"t")
	fc.mustRun("", "table", "import", db+"t2", "--file", writeInput(t, logOut))
	back, _ := fc.mustRun("", "table", "export", db+"t2")
	if a, b := rowsOnly(t, logOut), rowsOnly(t, back); !slices.Equal(a, b) || len(a) != 400 {
		t.Fatalf("log roundtrip: %d rows exported, %d back", len(a), len(b))
	}

	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "{\"id\":%d,\"name\":\"n%d\",\"score\":%d}\n", i%150, i, i)
	}
	fc.mustRun(in.String(), "produce", db+"kv")
	fc.mustRun("{\"id\":3}\n{\"id\":4}\n", "produce", db+"kv", "--delete")
	snapshot, _ := fc.mustRun("", "table", "export", db+"kv", "--snapshot")
	changelog, _ := fc.mustRun("", "table", "export", db+"kv")

	fc.mustRun("", "table", "import", db+"kv2", "--file", writeInput(t, snapshot))
	_, summary := fc.mustRun("", "table", "import", db+"kv3", "--file", writeInput(t, changelog), "--concurrency", "2")
	if !strings.Contains(summary, "(2 deletes)") {
		t.Fatalf("changelog import summary %q", summary)
	}
	for _, name := range []string{"kv2", "kv3"} {
		got, _ := fc.mustRun("", "table", "export", db+name, "--snapshot")
		if !sameLines(got, snapshot) || strings.Count(got, "\n") != 148 {
			t.Fatalf("%s: %d rows, want the %d of kv:\n%s", name, strings.Count(got, "\n"), strings.Count(snapshot, "\n"), got)
		}
	}
}

// rowsOnly is the lines of an export without the fields consume adds,
// sorted.
func rowsOnly(t *testing.T, out string) []string {
	t.Helper()
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			if strings.HasPrefix(k, "_") {
				delete(m, k)
			}
		}
		b, _ := json.Marshal(m)
		rows = append(rows, string(b))
	}
	slices.Sort(rows)
	return rows
}

// TestImportBadLine: a bad line stops the import with its line number; the
// lines before it are written and none after, however many parsers ran
// ahead. With --skip-bad the bad lines are counted, named and passed over.
func TestImportBadLine(t *testing.T) {
	fc := kvTables(t)
	bad := 2500 // past the first chunks, so later chunks are parsed meanwhile
	lines := strings.Split(strings.TrimSuffix(jsonRows(0, 4000), "\n"), "\n")
	lines[bad-1] = `{"id":"x"}`
	lines[3000] = `{"id":3000,"name":"row 3000",` // cut short
	file := writeInput(t, strings.Join(lines, "\n")+"\n")

	code, _, errOut := runCLI(t, "", "table", "import", fc.db+".t", "--file", file, "--concurrency", "4", "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("line %d: column \"id\"", bad)) ||
		!strings.Contains(errOut, fmt.Sprintf("imported %d rows into", bad-1)) {
		t.Fatalf("bad line %d: exit %d, %q", bad, code, errOut)
	}
	var ids []int64
	out, _ := fc.mustRun("", "table", "export", fc.db+".t")
	for _, r := range parseConsumed(t, out) {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if len(ids) != bad-1 || ids[0] != 0 || ids[len(ids)-1] != int64(bad-2) {
		t.Fatalf("%d rows written (%v…), want the %d before line %d", len(ids), ids[:min(3, len(ids))], bad-1, bad)
	}

	fc.createTable("t2", "id BIGINT NOT NULL, name STRING", 2, 1)
	code, _, errOut = runCLI(t, "", "table", "import", fc.db+".t2", "--file", file, "--skip-bad", "--server", fc.server)
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("line %d skipped: column \"id\"", bad)) ||
		!strings.Contains(errOut, "line 3001 skipped: invalid JSON row") || !strings.Contains(errOut, "imported 3998 rows into") ||
		!strings.Contains(errOut, "2 bad lines skipped") {
		t.Fatalf("--skip-bad: exit %d, %q", code, errOut)
	}

	// A log table refuses a changelog's deletes; a primary-key table a
	// _change it does not know.
	for _, tc := range []struct{ table, in, want string }{
		{"t", "{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"_change\":\"-D\"}\n", "line 2: bad _change: a log table takes rows to append"},
		{"kv", "{\"id\":2,\"name\":\"a\",\"_change\":\"+X\"}\n", `line 1: bad _change: "+X"`},
		{"kv", "{\"id\":2,\"_bucket\":1,\"_oops\":1}\n", `line 1: column "_oops": not in the schema`},
	} {
		code, _, errOut := runCLI(t, "", "table", "import", fc.db+"."+tc.table, "--file", writeInput(t, tc.in), "--server", fc.server)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("import %q into %s: exit %d, %q; want %q", tc.in, tc.table, code, errOut, tc.want)
		}
	}
}

// TestImportRefusals: an unknown table and usage mistakes.
func TestImportRefusals(t *testing.T) {
	fc := kvTables(t)
	file := writeInput(t, jsonRows(0, 3))
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"table", "import", fc.db + ".nope", "--file", file}, 1, `table "` + fc.db + `.nope" does not exist`},
		{[]string{"table", "import", fc.db + ".t"}, 2, "--file is required"},
		{[]string{"table", "import", fc.db + ".t", "--file", file + ".missing"}, 2, "not a readable file"},
		{[]string{"table", "import", fc.db + ".t", "--file", file, "--concurrency", "65"}, 2, "--concurrency must be from 1 to 64"},
	} {
		code, _, errOut := runCLI(t, "", append(tc.args, "--server", fc.server)...)
		if code != tc.wantCode || !strings.Contains(errOut, tc.want) {
			t.Errorf("floe %s: exit %d, %q; want %d and %q", strings.Join(tc.args, " "), code, errOut, tc.wantCode, tc.want)
		}
	}
	// From stdin.
	_, summary := fc.mustRun(jsonRows(0, 3), "table", "import", fc.db+".t", "--file", "-", "-o", "json")
	var res map[string]any
	if err := json.Unmarshal([]byte(summary), &res); err != nil || res["rows"] != 3.0 || res["all_acknowledged"] != true {
		t.Fatalf("json summary %q: %v", summary, err)
	}
}
