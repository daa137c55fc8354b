package logstore

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const killChildEnv = "FLOE_LOGSTORE_KILL_CHILD_DIR"

// TestKillChild is the child process of TestSIGKILLMidAppend: it appends
// under SyncAlways and prints each acknowledged batch's base offset.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("child process of TestSIGKILLMidAppend")
	}
	l, err := Open(Config{Dir: dir, SegmentMaxBytes: 256 << 10, PreallocateBytes: 64 << 10})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		info, err := l.Append(makeBatch(t, fmt.Sprint(i), 5, 300), 0)
		if err != nil {
			fmt.Fprintln(out, "error:", err)
			out.Flush()
			os.Exit(3)
		}
		fmt.Fprintf(out, "acked %d %d\n", info.BaseOffset, info.LastOffset)
		out.Flush()
	}
}

// TestSIGKILLMidAppend kills a child process that appends with SyncAlways and
// checks that every append it acknowledged survives, in order, repeatedly on
// the same folder.
func TestSIGKILLMidAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	var lastAcked int64 = -1
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		acks := 0
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "acked ") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child: %s", line)
			}
			f := strings.Fields(line)
			base, _ := strconv.ParseInt(f[1], 10, 64)
			last, _ := strconv.ParseInt(f[2], 10, 64)
			if base != lastAcked+1 {
				t.Fatalf("round %d: child acked %d after %d", round, base, lastAcked)
			}
			lastAcked = last
			acks++
			if acks == 300+round*97 { // mid-stream, while appends are in flight
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		cmd.Wait()
		l, err := Open(Config{Dir: dir, SegmentMaxBytes: 256 << 10})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		batches, err := readAll(t, l, 0)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if l.EndOffset() <= lastAcked {
			t.Fatalf("round %d: acknowledged offset %d lost, log ends at %d", round, lastAcked, l.EndOffset())
		}
		for i, b := range batches {
			if b.BaseOffset() != int64(5*i) {
				t.Fatalf("round %d: batch %d at offset %d", round, i, b.BaseOffset())
			}
		}
		// Appends past the last ack may have survived too; they count as acked
		// for the next round's continuity check.
		lastAcked = l.EndOffset() - 1
		l.Close()
	}
}
