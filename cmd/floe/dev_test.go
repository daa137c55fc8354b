package main

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// devRun is a `floe dev` running in the test process.
type devRun struct {
	addr        string
	out, errOut *syncBuffer
	stop        func() int // cancels it and returns its exit code
}

// runDevArgs starts `floe dev` with args and waits until it says it is
// ready.
func runDevArgs(t *testing.T, args ...string) *devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &devRun{out: newSyncBuffer(), errOut: newSyncBuffer()}
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, &cliEnv{stdout: d.out, stderr: d.errOut, stdin: strings.NewReader("")}, append([]string{"dev"}, args...))
	}()
	code, stopped := 0, false
	d.stop = func() int {
		if !stopped {
			cancel()
			code, stopped = <-exited, true
		}
		return code
	}
	t.Cleanup(func() { d.stop() })
	d.addr = d.out.waitFor(t, regexp.MustCompile(`ready in .*\n\s+address:\s+(\S+)`), exited)[1]
	return d
}

// TestDevSaysWhereDataLives: the banner names the data folder and says
// whether it outlives the process.
func TestDevSaysWhereDataLives(t *testing.T) {
	dir := t.TempDir()
	kept := runDevArgs(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	if !strings.Contains(kept.out.String(), dir+" (kept after exit)") {
		t.Fatalf("banner with --data-dir:\n%s", kept.out.String())
	}
	temp := runDevArgs(t, "--listen", "127.0.0.1:0")
	if !strings.Contains(temp.out.String(), "(temporary, deleted on exit; --data-dir DIR keeps data)") {
		t.Fatalf("banner without --data-dir:\n%s", temp.out.String())
	}
}

// TestDevFolderInUse: a second `floe dev` on a folder another one runs on
// says so at once, naming the folder and the process holding it, instead
// of timing out on a store's lock.
func TestDevFolderInUse(t *testing.T) {
	dir := t.TempDir()
	runDevArgs(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	code, _, errOut := runCLI(t, "", "dev", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "data folder "+dir+" is in use by another process (pid") {
		t.Fatalf("second floe dev on the same folder: exit %d, %q", code, errOut)
	}
}

// TestDevStopsCleanly: a dev cluster that served writes stops on Ctrl-C
// with exit 0 and no ERROR in its log.
func TestDevStopsCleanly(t *testing.T) {
	d := runDevArgs(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "info")
	for _, args := range [][]string{
		{"db", "create", "d"},
		{"table", "create", "d.t", "--schema", "id BIGINT NOT NULL"},
	} {
		if code, _, errOut := runCLI(t, "", append(args, "--server", d.addr)...); code != 0 {
			t.Fatalf("floe %v: %d %s", args, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, `{"id":1}`+"\n", "produce", "d.t", "--server", d.addr); code != 0 {
		t.Fatalf("produce: %d %s", code, errOut)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("floe dev exited with %d:\n%s", code, d.errOut.String())
	}
	if log := d.errOut.String(); strings.Contains(log, "level=ERROR") {
		t.Fatalf("a clean stop logged errors:\n%s", log)
	}
}

// TestDevGossipPortTaken: with the port after --listen taken, floe dev
// gossips on another free port instead of failing to start.
func TestDevGossipPortTaken(t *testing.T) {
	var listen string
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		next := "127.0.0.1:" + strconv.Itoa(port+1)
		blockTCP, err := net.Listen("tcp", next)
		if err != nil {
			continue
		}
		defer blockTCP.Close()
		blockUDP, err := net.ListenPacket("udp", next)
		if err != nil {
			continue
		}
		defer blockUDP.Close()
		listen = "127.0.0.1:" + strconv.Itoa(port)
		break
	}
	if listen == "" {
		t.Fatal("found no port whose neighbour could be taken")
	}
	d := runDevArgs(t, "--listen", listen, "--data-dir", t.TempDir())
	if d.addr != listen {
		t.Fatalf("dev listens on %s, want %s", d.addr, listen)
	}
}

// TestTransferLeadershipAlone: on a one-voter cluster there is nobody to
// hand leadership to, and the command says so.
func TestTransferLeadershipAlone(t *testing.T) {
	d := runDevArgs(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	code, _, errOut := runCLI(t, "", "cluster", "transfer-leadership", "--server", d.addr)
	if code != 1 || !strings.Contains(errOut, "node 1 is the only voter: there is no other to hand leadership to") {
		t.Fatalf("transfer-leadership alone: exit %d, %q", code, errOut)
	}
}

func TestVersionJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "version", "-o", "json")
	var v struct{ Version, Revision string }
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version == "" {
		t.Fatalf("version -o json: %d %q %s", code, out, errOut)
	}
}

// TestVersionStamped: the version and revision -ldflags -X stamps are
// printed, and without a revision the line ends with the version, no
// trailing space.
func TestVersionStamped(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	for _, tc := range []struct{ version, revision, want string }{
		{"v1.2.3", "0123abc", "floe v1.2.3 0123abc\n"},
		{"v1.2.3", "", "floe v1.2.3\n"},
	} {
		version, revision = tc.version, tc.revision
		for _, args := range [][]string{{"--version"}, {"version"}} {
			if code, out, _ := runCLI(t, "", args...); code != 0 || out != tc.want {
				t.Errorf("stamped %q %q: floe %v = %d %q, want %q", tc.version, tc.revision, args, code, out, tc.want)
			}
		}
	}
	version, revision = "v1.2.3", "0123abc"
	code, out, _ := runCLI(t, "", "version", "-o", "json")
	if code != 0 || !strings.Contains(out, `"version": "v1.2.3"`) || !strings.Contains(out, `"revision": "0123abc"`) {
		t.Errorf("version -o json: %d %q", code, out)
	}
}
