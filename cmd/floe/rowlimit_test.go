package main

import (
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
