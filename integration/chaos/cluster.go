package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/floedb/floe/client"
)

// Options shape a chaos cluster.
type Options struct {
	// Binary is the floe binary to run. Required.
	Binary string
	// Nodes is how many nodes run, each with both roles. Default 3.
	Nodes int
	// Dir holds the nodes' data folders and logs. Required.
	Dir string
	// DiskBytes, when set, puts each node's data folder on a tmpfs of this
	// size, so FillDisk can run it out of space.
	DiskBytes int64
	// S3 starts a versitygw (it must be on PATH) in the test's namespace
	// and makes the nodes tier to it every TieringInterval (default 1 s).
	S3              bool
	TieringInterval time.Duration
	// ExtraArgs are added to every node's `floe serve`.
	ExtraArgs []string
	// Containers runs each node as a Docker container (of an image FROM
	// scratch that holds Binary, which must then be static) on a bridge
	// network of the cluster's own, instead of as a process in a network
	// namespace. The faults are the same; see DockerAvailable.
	Containers bool
	// Secure starts the nodes as the README's secure recipe does: TLS,
	// client authentication, authorization with user:admin as
	// super-user, gossip encrypted; the workloads sign in as admin with
	// a client certificate. Processes only, not Containers.
	Secure bool
	// Logf receives the harness's messages (nil: discarded).
	Logf func(format string, args ...any)
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	switch {
	case o.Binary == "" || o.Dir == "":
		return errors.New("chaos: options: Binary and Dir are required")
	case o.Nodes < 0 || o.Nodes > 9:
		return fmt.Errorf("chaos: options: %d nodes, want 1 to 9", o.Nodes)
	case o.Secure && o.Containers:
		return errors.New("chaos: options: a secure cluster runs as processes, not containers")
	}
	return nil
}

// Node is one floe process of a Cluster.
type Node struct {
	ID      uint32
	Addr    string // RPC address, reachable from the test
	DataDir string
	LogPath string

	c      *Cluster
	argv   []string // what starts it: the process, or `docker start --attach`
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// Cluster is a running chaos cluster. Its methods are safe for concurrent
// use.
type Cluster struct {
	opts  Options
	net   *network
	Nodes []*Node
	s3    *s3Server
	sec   *secureFiles // nil: plaintext
	logf  func(string, ...any)

	mu     sync.Mutex
	mounts []string
	netem  map[uint32]bool // nodes whose link has netem set
}

// Start sets up the network, starts every node and waits until the
// cluster is ready (a metadata leader, every tablet node registered and
// live). On error it undoes what it did.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.TieringInterval == 0 {
		opts.TieringInterval = time.Second
	}
	c := &Cluster{opts: opts, net: newNetwork(opts.Nodes), logf: opts.Logf}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	var image string
	if opts.Containers {
		if err := DockerAvailable(ctx); err != nil {
			return nil, err
		}
		if image, err = ensureImage(ctx, opts.Binary, c.logf); err != nil {
			return nil, err
		}
		sweepStaleDocker(ctx)
	}
	sweepStale(ctx)
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := c.net.setUp(ctx, opts.Containers); err != nil {
		return nil, err
	}
	var remote []string
	if opts.S3 {
		if c.s3, err = startS3(ctx, filepath.Join(opts.Dir, "s3"), c.net.storeHost()); err != nil {
			return nil, err
		}
		remote = c.s3.args()
	}
	var join, hosts []string
	for i := 1; i <= opts.Nodes; i++ {
		join = append(join, c.net.addr(i)+":7700")
		hosts = append(hosts, c.net.addr(i))
	}
	if opts.Secure {
		if c.sec, err = makeSecureFiles(filepath.Join(opts.Dir, "certs"), hosts); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= opts.Nodes; i++ {
		nd := &Node{ID: uint32(i), c: c, Addr: c.net.addr(i) + ":7700",
			DataDir: filepath.Join(opts.Dir, fmt.Sprintf("node%d", i)), LogPath: filepath.Join(opts.Dir, fmt.Sprintf("node%d.log", i))}
		if err := os.MkdirAll(nd.DataDir, 0o755); err != nil {
			return nil, err
		}
		if opts.DiskBytes > 0 {
			if err := run(ctx, "mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", opts.DiskBytes), "tmpfs", nd.DataDir); err != nil {
				return nil, err
			}
			c.mounts = append(c.mounts, nd.DataDir)
		}
		dataDir := nd.DataDir
		if opts.Containers {
			dataDir = "/data"
		}
		serve := append([]string{"serve", "--id", strconv.Itoa(i),
			"--roles", "meta,tablet", "--data-dir", dataDir, "--listen", nd.Addr, "--gossip", c.net.addr(i) + ":7701",
			"--join", strings.Join(join, ","), "--bootstrap-expect", strconv.Itoa(opts.Nodes),
			"--tiering-interval", opts.TieringInterval.String()}, remote...)
		serve = append(serve, opts.ExtraArgs...)
		if c.sec != nil {
			serve = append(serve, c.sec.nodeArgs(i)...)
		}
		if opts.Containers {
			if err := c.net.createContainer(ctx, i, image, nd.DataDir, serve); err != nil {
				return nil, err
			}
			nd.argv = []string{"docker", "start", "--attach", c.net.container(i)}
		} else {
			nd.argv = append([]string{"ip", "netns", "exec", c.net.ns(i), opts.Binary}, serve...)
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for _, nd := range c.Nodes {
		if err := nd.start(); err != nil {
			return nil, err
		}
	}
	if err := c.WaitReady(ctx, 2*time.Minute); err != nil { // a loaded CI machine once took over a minute
		return nil, err
	}
	return c, nil
}

// Addrs are the nodes' RPC addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, nd := range c.Nodes {
		out[i] = nd.Addr
	}
	return out
}

// Node returns node id (1-based).
func (c *Cluster) Node(id uint32) *Node { return c.Nodes[id-1] }

// Client connects a client to every node.
func (c *Cluster) Client(ctx context.Context) (*client.Client, error) {
	if c.sec != nil {
		return c.sec.connect(ctx, c.Addrs())
	}
	return client.Connect(ctx, c.Addrs()...)
}

// WaitReady waits until a metadata leader is known and every tablet node
// is registered and live.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cl, err := c.Client(ctx)
		if err == nil {
			st, serr := cl.Admin().ClusterStatus(ctx)
			cl.Close()
			err = serr
			if serr == nil {
				live := 0
				for _, n := range st.Nodes {
					if n.Alive {
						live++
					}
				}
				if st.Leader != 0 && live == len(c.Nodes) {
					return nil
				}
				err = fmt.Errorf("leader %d, %d of %d nodes live", st.Leader, live, len(c.Nodes))
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: cluster not ready after %v: %v", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (nd *Node) start() error {
	logf, err := os.OpenFile(nd.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(nd.argv[0], nd.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The node dies with the test binary, whatever stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
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
	return nil
}

// Running says whether the node's process is up (paused counts).
func (nd *Node) Running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil
}

// Paused says whether the node is stopped with SIGSTOP.
func (nd *Node) Paused() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.paused
}

// Kill sends SIGKILL and waits for the process to end.
func (nd *Node) Kill() { nd.signalAndWait(syscall.SIGKILL, 0) }

// Stop sends SIGTERM and waits, with SIGKILL after 10 s.
func (nd *Node) Stop() { nd.signalAndWait(syscall.SIGTERM, 10*time.Second) }

// signal sends sig to the node: to its process, or through Docker to its
// container's (SIGSTOP and SIGCONT become docker pause and unpause, which
// freeze the container's cgroup).
func (nd *Node) signal(cmd *exec.Cmd, sig syscall.Signal) {
	if !nd.c.opts.Containers {
		_ = cmd.Process.Signal(sig)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := nd.c.net.container(int(nd.ID))
	switch sig {
	case syscall.SIGSTOP:
		_ = run(ctx, "docker", "pause", name)
	case syscall.SIGCONT:
		_ = run(ctx, "docker", "unpause", name)
	default:
		_ = run(ctx, "docker", "kill", "--signal", strconv.Itoa(int(sig)), name)
	}
}

func (nd *Node) signalAndWait(sig syscall.Signal, grace time.Duration) {
	nd.mu.Lock()
	cmd, exited, paused := nd.cmd, nd.exited, nd.paused
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	if paused {
		nd.signal(cmd, syscall.SIGCONT)
	}
	nd.signal(cmd, sig)
	if grace > 0 {
		select {
		case <-exited:
		case <-time.After(grace):
			nd.signal(cmd, syscall.SIGKILL)
			<-exited
		}
	} else {
		<-exited
	}
	nd.mu.Lock()
	nd.cmd, nd.paused = nil, false
	nd.mu.Unlock()
}

// Restart starts a stopped or killed node again with its flags.
func (nd *Node) Restart() error {
	if nd.Running() {
		return fmt.Errorf("chaos: node %d is running", nd.ID)
	}
	return nd.start()
}

// Pause sends SIGSTOP; Resume SIGCONT.
func (nd *Node) Pause() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil && !nd.paused {
		nd.signal(nd.cmd, syscall.SIGSTOP)
		nd.paused = true
	}
}

func (nd *Node) Resume() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil && nd.paused {
		nd.signal(nd.cmd, syscall.SIGCONT)
		nd.paused = false
	}
}

// Wipe deletes a stopped node's data (the folder stays, a tmpfs mounted).
func (nd *Node) Wipe() error {
	if nd.Running() {
		return fmt.Errorf("chaos: wipe node %d while it runs", nd.ID)
	}
	entries, err := os.ReadDir(nd.DataDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(nd.DataDir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Log returns what the node wrote to its log so far.
func (nd *Node) Log() string {
	data, _ := os.ReadFile(nd.LogPath)
	return string(data)
}

// Close stops every node and undoes the network, mounts and S3 server.
func (c *Cluster) Close() error {
	for _, nd := range c.Nodes {
		nd.Kill()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.net.tearDown(ctx)
	for _, m := range c.mounts {
		if uerr := run(ctx, "umount", "-l", m); uerr != nil && err == nil {
			err = uerr
		}
	}
	if c.s3 != nil {
		c.s3.close()
	}
	return err
}
