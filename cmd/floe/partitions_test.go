package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPartitionedTableCLI: a table made with --partition-by takes rows of
// new partitions through produce, lists them, reads them all or pruned
// (consume --partition, export --partition), and drops one with its
// rows; the partition commands refuse what is wrong with the reason.
func TestPartitionedTableCLI(t *testing.T) {
	fc := startCluster(t)
	table := fc.db + ".events"
	fc.mustRun("", "db", "create", fc.db, "--if-not-exists")
	out, _ := fc.mustRun("", "table", "create", table, "--schema", "dt STRING NOT NULL, id BIGINT NOT NULL, msg STRING",
		"--partition-by", "dt", "--buckets", "2", "--replication", "2")
	if !strings.Contains(out, "partitioned by dt (2 buckets a partition") {
		t.Fatalf("create: %s", out)
	}
	var rows strings.Builder
	for id := range 30 {
		fmt.Fprintf(&rows, `{"dt":"2026-12-0%d","id":%d,"msg":"m%d"}`+"\n", 1+id%3, id, id)
	}
	fc.mustRun(rows.String(), "produce", table)

	out, _ = fc.mustRun("", "table", "partitions", table)
	for _, want := range []string{"dt=2026-12-01", "dt=2026-12-02", "dt=2026-12-03", "on-write"} {
		if !strings.Contains(out, want) {
			t.Fatalf("partitions lacks %q:\n%s", want, out)
		}
	}
	count := func(out string) map[string]int {
		n := map[string]int{}
		for line := range strings.Lines(out) {
			var rec struct {
				Dt        string `json:"dt"`
				Partition string `json:"_partition"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if rec.Partition != "" && rec.Partition != "dt="+rec.Dt {
				t.Fatalf("line %q: _partition is not its row's", line)
			}
			n[rec.Dt]++
		}
		return n
	}
	out, _ = fc.mustRun("", "consume", table)
	if n := count(out); n["2026-12-01"] != 10 || n["2026-12-02"] != 10 || n["2026-12-03"] != 10 {
		t.Fatalf("consume of every partition: %v", n)
	}
	out, _ = fc.mustRun("", "consume", table, "--partition", "dt>=2026-12-02", "--no-meta")
	if n := count(out); len(n) != 2 || n["2026-12-02"] != 10 || n["2026-12-03"] != 10 {
		t.Fatalf("consume --partition dt>=2026-12-02: %v", n)
	}
	file := filepath.Join(t.TempDir(), "out.jsonl")
	_, errOut := fc.mustRun("", "table", "export", table, "--partition", "dt=2026-12-01", "--partition", "2026-12-03", "--file", file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(string(data)); len(n) != 2 || n["2026-12-01"] != 10 || n["2026-12-03"] != 10 {
		t.Fatalf("export of two partitions: %v (%s)", n, errOut)
	}

	// Elections and moves name a partition's buckets by its name.
	if out, _ = fc.mustRun("", "table", "elect", table, "--partition", "dt=2026-12-02"); out == "" {
		t.Fatal("table elect --partition printed nothing")
	}
	out, _ = fc.mustRun("", "table", "partition", "drop", table, "--partition", "dt=2026-12-01")
	if !strings.Contains(out, "dropped partition dt=2026-12-01") {
		t.Fatalf("drop: %s", out)
	}
	out, _ = fc.mustRun("", "consume", table, "--no-meta")
	if n := count(out); len(n) != 2 || n["2026-12-01"] != 0 {
		t.Fatalf("consume after the drop: %v", n)
	}
	out, _ = fc.mustRun("", "table", "partition", "add", table, "--partition", "dt=2026-12-09")
	if !strings.Contains(out, "added partition dt=2026-12-09") {
		t.Fatalf("add: %s", out)
	}
	if out, _ = fc.mustRun("", "table", "partition", "add", table, "--partition", "2026-12-09", "--if-not-exists"); !strings.Contains(out, "already exists") {
		t.Fatalf("add --if-not-exists of an existing one: %s", out)
	}
	out, _ = fc.mustRun("", "table", "describe", table)
	if !strings.Contains(out, "partition key") || !strings.Contains(out, "3 (dt=2026-12-02 to dt=2026-12-09)") {
		t.Fatalf("describe:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "partition", "drop", table, "--partition", "dt=2026-12-01"}, "does not exist"},
		{[]string{"table", "partition", "add", table, "--partition", "dt=a/b"}, "dt"},
		{[]string{"table", "partition", "add", table, "--partition", "day=2026-12-01"}, "not a partition column"},
		{[]string{"table", "partition", "move", table, "--partition", "dt=x"}, "want add or drop"},
		{[]string{"table", "elect", table}, "partition"},
		{[]string{"consume", table, "--partition", "day>=x"}, "not a partition column"},
		{[]string{"table", "create", fc.db + ".bad", "--schema", "dt DOUBLE NOT NULL", "--partition-by", "dt"}, "DOUBLE"},
		{[]string{"table", "create", fc.db + ".bad", "--schema", "dt STRING NOT NULL, id INT NOT NULL, PRIMARY KEY (id)", "--partition-by", "dt"},
			"not in the primary key"},
	} {
		code, _, errOut := runCLI(t, "", append(tc.args, "--server", fc.server)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("floe %v: exit %d, stderr %q; want a refusal naming %q", tc.args, code, errOut, tc.want)
		}
	}
}
