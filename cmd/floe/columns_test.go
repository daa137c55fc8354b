package main

import (
	"strings"
	"testing"
)

// TestColumnsFlag: consume and table export print only the columns
// --columns names, in its order, for a log table (Arrow batches cut by
// the leader), its changelog and a primary-key table's snapshot; an
// unknown column is refused with the table's columns.
func TestColumnsFlag(t *testing.T) {
	fc := startCluster(t)
	fc.mustRun("", "db", "create", fc.db, "--if-not-exists")
	logT, pkT := fc.db+".clicks", fc.db+".users"
	fc.mustRun("", "table", "create", logT, "--replication", "1", "--buckets", "1", "--schema",
		"id BIGINT NOT NULL, page STRING, ms INT")
	fc.mustRun("", "table", "create", pkT, "--replication", "1", "--buckets", "1", "--schema",
		"id BIGINT NOT NULL PRIMARY KEY, name STRING, age INT")
	fc.mustRun(`{"id":1,"page":"/a","ms":10}`+"\n"+`{"id":2,"page":"/b","ms":20}`+"\n", "produce", logT)
	fc.mustRun(`{"id":7,"name":"ann","age":30}`+"\n", "produce", pkT)

	const want = `{"ms":10,"id":1}` + "\n" + `{"ms":20,"id":2}` + "\n"
	if out, _ := fc.mustRun("", "consume", logT, "--columns", "ms, id", "--no-meta"); out != want {
		t.Errorf("consume --columns ms,id:\n%s\nwant\n%s", out, want)
	}
	out, _ := fc.mustRun("", "table", "export", logT, "--columns", "ms,id")
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if prefix := strings.Split(want, "\n")[i]; !strings.HasPrefix(line, strings.TrimSuffix(prefix, "}")+`,"_bucket":0,`) {
			t.Errorf("export --columns ms,id, line %d: %s, want %s and the record's position", i, line, prefix)
		}
	}
	if out, _ := fc.mustRun("", "table", "export", pkT, "--snapshot", "--columns", "name"); out != `{"name":"ann"}`+"\n" {
		t.Errorf("export --snapshot --columns name: %s", out)
	}
	if out, _ := fc.mustRun("", "consume", pkT, "--columns", "age", "--no-meta"); out != `{"age":30,"_change":"+I"}`+"\n" {
		t.Errorf("consume of a changelog --columns age: %s", out)
	}
	code, _, errOut := runCLI(t, "", "consume", logT, "--columns", "id,nope", "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, `no column "nope" (its columns: id, page, ms)`) {
		t.Errorf("unknown column: exit %d, stderr %q", code, errOut)
	}
}
