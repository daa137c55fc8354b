package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// floeBin is the floe binary built once for the package's tests.
var floeBin string

var keepLogs = flag.Bool("floe.keep-logs", false, "print every node's log at the end of each cluster test")

var raceBinary = flag.Bool("floe.race", false, "build the floe binary with the race detector (node logs then report races)")

var logLevel = flag.String("floe.log-level", "info", "log level of the nodes the tests start")

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "floe-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	floeBin = filepath.Join(dir, "floe")
	args := []string{"build", "-o", floeBin}
	if *raceBinary {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/floedb/floe/cmd/floe")...)
	if !*raceBinary {
		// Static, so the chaos suite's containers (FROM scratch) run it too.
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building floe:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := s3server.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the S3 server:", err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Cluster is a set of floe processes on loopback.
type Cluster struct {
	t     testing.TB
	dir   string
	Nodes []*Node
	// Sec is the cluster's security when it was started Secure: its CA,
	// and the files its harness clients sign in with.
	Sec *Security
}

// Node is one floe process.
type Node struct {
	ID      uint32
	Addr    string
	Gossip  string
	DataDir string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// ClusterOptions shape a test cluster.
type ClusterOptions struct {
	// Extra flags for every `floe serve`.
	ExtraArgs []string
	// Roles of the n nodes (`floe serve --roles`); default "meta,tablet".
	Roles string
	// NodeArgs adds flags to one node's `floe serve`, by node id.
	NodeArgs map[uint32][]string
	// Unregistered: do not wait for every node to register (a test
	// that keeps one from it).
	Unregistered bool
	// Secure starts the nodes with TLS (certificates of a CA made for the
	// test), client authentication, authorization with user:admin as
	// super-user, and gossip encrypted; the harness's own clients and
	// CLI calls sign in as admin with a client certificate.
	Secure bool
}

// StartCluster starts n nodes with both roles (or opts.Roles) forming one
// cluster, and waits until it has a metadata leader that answers.
func StartCluster(t testing.TB, n int, opts ClusterOptions) *Cluster {
	t.Helper()
	c := &Cluster{t: t, dir: t.TempDir()}
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{
			ID: uint32(i + 1), Addr: freeAddr(t), Gossip: freeAddr(t),
			DataDir: filepath.Join(c.dir, fmt.Sprintf("node%d", i+1)),
			logPath: filepath.Join(c.dir, fmt.Sprintf("node%d.log", i+1)),
		})
	}
	var addrs []string
	for _, nd := range c.Nodes {
		addrs = append(addrs, nd.Addr)
	}
	if opts.Secure {
		c.Sec = newSecurity(t, filepath.Join(c.dir, "certs"))
	}
	for _, nd := range c.Nodes {
		nd.args = append([]string{"serve", "--id", strconv.Itoa(int(nd.ID)), "--roles", cmp.Or(opts.Roles, "meta,tablet"),
			"--data-dir", nd.DataDir, "--listen", nd.Addr, "--gossip", nd.Gossip,
			"--join", strings.Join(addrs, ","), "--bootstrap-expect", strconv.Itoa(n), "--log-level", *logLevel},
			opts.ExtraArgs...)
		nd.args = append(nd.args, c.Sec.nodeArgs(t, nd.ID)...)
		nd.args = append(nd.args, opts.NodeArgs[nd.ID]...)
		c.start(nd)
	}
	t.Cleanup(c.stopAll)
	c.WaitLeader(30 * time.Second)
	if !opts.Unregistered {
		c.WaitRegistered(30 * time.Second)
	}
	return c
}

// WaitRegistered waits until every node is registered and answers.
func (c *Cluster) WaitRegistered(timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := c.connect(ctx, c.Addrs()...)
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	waitFor(c.t, timeout, "every node to register", func() bool {
		st, err := cl.Admin().ClusterStatus(ctx)
		if err != nil || len(st.Nodes) != len(c.Nodes) {
			return false
		}
		for _, n := range st.Nodes {
			if !n.Alive {
				return false
			}
		}
		return true
	})
}

// portsMu guards nextPort: the harness hands out every port once per
// process.
var (
	portsMu  sync.Mutex
	nextPort = 10000 + rand.IntN(20000)
)

// freeAddr returns a loopback address whose port is free for TCP and UDP
// (gossip uses both). Ports come from below Linux's ephemeral range
// (32768+), so neither a port the kernel hands to an outgoing connection
// nor one an earlier freeAddr returned can be handed out twice.
func freeAddr(t testing.TB) string {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 20000 {
		port := nextPort
		nextPort++
		if nextPort >= 30000 {
			nextPort = 10000
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return addr
	}
	t.Fatal("no free loopback port in [10000, 30000)")
	return ""
}

func (c *Cluster) start(nd *Node) {
	c.t.Helper()
	logf, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(logf, "==== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(floeBin, nd.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	nd.mu.Lock()
	nd.cmd, nd.exited, nd.paused = cmd, exited, false
	nd.mu.Unlock()
}

// AddNode starts one more node with the given roles, joining the cluster.
func (c *Cluster) AddNode(roles string) *Node {
	c.t.Helper()
	id := uint32(len(c.Nodes) + 1)
	nd := &Node{ID: id, Addr: freeAddr(c.t), Gossip: freeAddr(c.t),
		DataDir: filepath.Join(c.dir, fmt.Sprintf("node%d", id)), logPath: filepath.Join(c.dir, fmt.Sprintf("node%d.log", id))}
	nd.args = []string{"serve", "--id", strconv.Itoa(int(id)), "--roles", roles, "--data-dir", nd.DataDir,
		"--listen", nd.Addr, "--gossip", nd.Gossip, "--join", strings.Join(c.Addrs(), ","), "--log-level", *logLevel}
	nd.args = append(nd.args, c.Sec.nodeArgs(c.t, id)...)
	c.Nodes = append(c.Nodes, nd)
	c.start(nd)
	return nd
}

// Kill sends SIGKILL and waits for the process to end.
func (c *Cluster) Kill(nd *Node) {
	nd.mu.Lock()
	cmd, exited := nd.cmd, nd.exited
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	nd.mu.Lock()
	nd.cmd = nil
	nd.mu.Unlock()
}

// Stop sends SIGTERM and waits (SIGKILL after 10 s).
func (c *Cluster) Stop(nd *Node) {
	nd.mu.Lock()
	cmd, exited, paused := nd.cmd, nd.exited, nd.paused
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
	nd.mu.Lock()
	nd.cmd = nil
	nd.mu.Unlock()
}

// Restart starts a stopped or killed node again with the same flags.
func (c *Cluster) Restart(nd *Node) { c.start(nd) }

// Pause and Resume send SIGSTOP and SIGCONT.
func (c *Cluster) Pause(nd *Node) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.cmd.Process.Signal(syscall.SIGSTOP)
	nd.paused = true
}

func (c *Cluster) Resume(nd *Node) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.cmd.Process.Signal(syscall.SIGCONT)
	nd.paused = false
}

// Wipe deletes a stopped node's data folder.
func (c *Cluster) Wipe(nd *Node) {
	if err := os.RemoveAll(nd.DataDir); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) stopAll() {
	for _, nd := range c.Nodes {
		c.Stop(nd)
	}
	for _, nd := range c.Nodes {
		if data, _ := os.ReadFile(nd.logPath); bytes.Contains(data, []byte("WARNING: DATA RACE")) {
			c.t.Errorf("node %d reported a data race (see its log)", nd.ID)
		}
	}
	if c.t.Failed() || *keepLogs {
		for _, nd := range c.Nodes {
			data, _ := os.ReadFile(nd.logPath)
			if len(data) > 64<<10 {
				data = data[len(data)-64<<10:]
			}
			c.t.Logf("---- log of node %d (tail) ----\n%s", nd.ID, data)
		}
	}
}

// Addrs lists every node's RPC address.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, nd := range c.Nodes {
		out = append(out, nd.Addr)
	}
	return out
}

// NodeAt returns the node whose RPC address is addr, nil if none.
func (c *Cluster) NodeAt(addr string) *Node {
	for _, nd := range c.Nodes {
		if nd.Addr == addr {
			return nd
		}
	}
	return nil
}

// Client connects the SDK to every node.
func (c *Cluster) Client(ctx context.Context) *client.Client {
	c.t.Helper()
	cl, err := c.connect(ctx, c.Addrs()...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// CLI runs the floe binary as a client against the cluster.
func (c *Cluster) CLI(args ...string) (stdout, stderr string, code int) {
	return c.CLIInput("", args...)
}

// MustCLI runs CLI and fails the test unless the command exits 0; it
// returns the command's stdout.
func (c *Cluster) MustCLI(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.CLI(args...)
	if code != 0 {
		c.t.Fatalf("floe %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// CLIInput is CLI with stdin.
func (c *Cluster) CLIInput(stdin string, args ...string) (stdout, stderr string, code int) {
	args = append(args, "--server", strings.Join(c.Addrs(), ","))
	args = append(args, c.Sec.clientArgs()...)
	cmd := exec.Command(floeBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// CLIJSON runs a CLI command with --output json and decodes its output.
func (c *Cluster) CLIJSON(v any, args ...string) {
	c.t.Helper()
	out, errOut, code := c.CLI(append(args, "--output", "json")...)
	if code != 0 {
		c.t.Fatalf("floe %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("floe %s: bad JSON %q: %v", strings.Join(args, " "), out, err)
	}
}

// raftStatus asks one node for its own Raft view.
func (c *Cluster) raftStatus(ctx context.Context, nd *Node) (*client.RaftStatus, error) {
	cl, err := c.connect(ctx, nd.Addr)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.Admin().NodeRaftStatus(ctx, nd.Addr)
}

// WaitLeader waits until some node reports itself leader and returns it.
func (c *Cluster) WaitLeader(timeout time.Duration) *Node {
	c.t.Helper()
	var leader *Node
	waitFor(c.t, timeout, "a metadata leader", func() bool {
		leader = c.Leader()
		return leader != nil
	})
	return leader
}

// Leader returns the node that reports itself leader with the highest term.
func (c *Cluster) Leader() *Node {
	var best *Node
	var bestTerm uint64
	for _, nd := range c.Nodes {
		if !nd.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		st, err := c.raftStatus(ctx, nd)
		cancel()
		if err == nil && st.State == "leader" && st.Term >= bestTerm {
			best, bestTerm = nd, st.Term
		}
	}
	return best
}

func (nd *Node) running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil && !nd.paused
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// connect connects the SDK to addrs as the harness does: plaintext, or as
// admin on a secure cluster.
func (c *Cluster) connect(ctx context.Context, addrs ...string) (*client.Client, error) {
	if c.Sec == nil {
		return client.Connect(ctx, addrs...)
	}
	return client.ConnectWith(ctx, c.Sec.Config(c.t, "admin", addrs...))
}
