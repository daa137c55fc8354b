package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/floedb/floe/client"
)

// TestTableSnapshot: `table snapshot` takes and commits a KV snapshot of
// every bucket of a primary-key table; a second one after one change
// reuses the parts nothing changed; a log table is refused.
func TestTableSnapshot(t *testing.T) {
	fc := kvTables(t)
	var rows strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&rows, "{\"id\":%d,\"name\":\"n%d\",\"score\":%d}\n", i, i, i)
	}
	if code, _, errOut := runCLI(t, rows.String(), "produce", fc.db+".kv", "--server", fc.server); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	snapshot := func() []client.KVSnapshot {
		t.Helper()
		code, out, errOut := runCLI(t, "", "table", "snapshot", fc.db+".kv", "--server", fc.server, "-o", "json")
		if code != 0 {
			t.Fatalf("table snapshot: exit %d: %s", code, errOut)
		}
		var got []client.KVSnapshot
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return got
	}
	first := snapshot()
	var total int64
	for _, s := range first {
		total += s.Rows
		if s.Offset <= 0 || s.ReusedParts != 0 {
			t.Fatalf("first snapshot of bucket %d: %+v", s.Bucket, s)
		}
	}
	if len(first) != 3 || total != 10_000 {
		t.Fatalf("snapshots %+v: %d rows in all, want 10000 over 3 buckets", first, total)
	}
	if code, _, errOut := runCLI(t, "{\"id\":7,\"name\":\"changed\"}\n", "produce", fc.db+".kv", "--server", fc.server); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	reused := 0
	for _, s := range snapshot() {
		reused += s.ReusedParts
	}
	if reused == 0 {
		t.Fatal("the second snapshot reused no part after one row changed")
	}
	code, _, errOut := runCLI(t, "", "table", "snapshot", fc.db+".t", "--server", fc.server)
	if code == 0 || !strings.Contains(errOut, "no KV snapshots") {
		t.Fatalf("snapshot of a log table: exit %d, %q", code, errOut)
	}
}
