package main

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestProgressLine: each line is drawn over the last, blanking what a
// shorter one leaves; a message goes on a line of its own; erasing leaves
// the cursor at the start of a blank line. Not a terminal: nothing drawn.
func TestProgressLine(t *testing.T) {
	var out bytes.Buffer
	p := &progressLine{out: &out}
	p.draw("export a.t: 10 rows")
	p.draw("export a.t: 5")
	p.printf("line %d skipped\n", 3)
	p.draw("x")
	p.erase()
	want := "\rexport a.t: 10 rows" + "\rexport a.t: 5      " + "\r             \rline 3 skipped\n" + "\rx" + "\r \r"
	if out.String() != want {
		t.Fatalf("drawn %q\nwant  %q", out.String(), want)
	}

	out.Reset()
	q := startProgress(&out, func(time.Duration) string { return "never drawn" })
	q.stop()
	q.stop() // twice is fine
	if out.Len() != 0 {
		t.Fatalf("drew %q on a buffer", out.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&out) {
		t.Fatal("a file or a buffer taken for a terminal")
	}
}
