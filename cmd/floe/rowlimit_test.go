package main

import (
	"slices"
	"strings"
	"testing"
)

// TestProduceRefusesARowTooLargeBeforeSending: a row that cannot fit in
// any batch the cluster takes is refused at its line, naming the limit and
// the flag that sets it, before anything is sent; the rows before it are
// written and acknowledged.
func TestProduceRefusesARowTooLargeBeforeSending(t *testing.T) {
	fc, table := startLogTable(t, 1, 1)
	in := `{"id":1,"name":"small"}` + "\n" + `{"id":2,"name":"` + strings.Repeat("x", 9<<20) + `"}` + "\n"
	code, _, errOut := runCLI(t, in, "produce", table, "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, "line 2: row too large: a row of") ||
		!strings.Contains(errOut, "largest batch the cluster takes, 8388608 bytes (floe serve --max-batch-bytes)") ||
		!strings.Contains(errOut, "produced 1 row,") {
		t.Fatalf("produce of a 9 MiB row: exit %d, %q", code, errOut)
	}
}

// TestConsumeNoMetaRoundTrips: consume --no-meta prints lines that produce
// takes back as they are, so a table copies with a pipe.
func TestConsumeNoMetaRoundTrips(t *testing.T) {
	fc, table := startLogTable(t, 2, 1)
	rows := jsonRows(0, 20)
	if code, _, errOut := runCLI(t, rows, "produce", table, "--server", fc.server); code != 0 {
		t.Fatalf("produce: %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "consume", table, "--no-meta", "--server", fc.server)
	if code != 0 || strings.Contains(out, "_offset") {
		t.Fatalf("consume --no-meta: %d %q %s", code, out, errOut)
	}
	copyTable := fc.createTable("copy", "id BIGINT NOT NULL, name STRING", 1, 1)
	if code, _, errOut := runCLI(t, out, "produce", copyTable, "--server", fc.server); code != 0 {
		t.Fatalf("produce of consume --no-meta output: %d %s", code, errOut)
	}
	_, copied, _ := runCLI(t, "", "consume", copyTable, "--no-meta", "--server", fc.server)
	lines := func(s string) []string {
		l := strings.Split(strings.TrimSpace(s), "\n")
		slices.Sort(l)
		return l
	}
	if want := lines(rows); !slices.Equal(lines(copied), want) {
		t.Fatalf("copied rows %v, want %v", lines(copied), want)
	}
}
