package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// network is the namespaces, links and filter rules of one cluster: node
// i (1-based) lives in namespace <prefix>-n<i> at 10.<net>.<i>.2, its link's
// other end is 10.<net>.<i>.1 in the test's namespace, and traffic between
// nodes is routed (not bridged) through it, so the FORWARD chain sees
// every packet between two nodes with both addresses.
type network struct {
	prefix string // names of namespaces, links and the chain
	net    int    // second octet of the addresses
	nodes  int
	chain  string
	docker bool // a Docker bridge network, one container per node
}

// Available reports whether this machine can run a chaos cluster: root,
// ip and iptables.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("chaos: needs root (network namespaces, iptables, tmpfs mounts)")
	}
	for _, tool := range []string{"ip", "iptables", "tc", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("chaos: %s not found: %w", tool, err)
		}
	}
	return nil
}

// run runs a command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// clusters counts the clusters this process started, so each one's names
// differ from the last one's.
var clusters atomic.Int64

// newNetwork names a cluster's network after this process's pid (so a
// later run can tell whether the process that made it is gone, see
// sweepStale) and a counter.
func newNetwork(nodes int) *network {
	k := clusters.Add(1)
	tag := strconv.FormatInt(int64(os.Getpid()), 36) + strconv.FormatInt(k%36, 36)
	return &network{prefix: "flc" + tag, nodes: nodes, chain: "FLC-" + tag}
}

// lockNetworks takes the machine-wide lock under which a cluster picks its
// addresses and makes its links, so that two test processes setting up at
// once cannot pick the same second octet. The returned func releases it.
func lockNetworks() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "floe-chaos-net.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chaos: network lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("chaos: network lock: %w", err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// usedOctets are the second octets of the 10.X addresses that `ip -o -4
// addr show` printed.
func usedOctets(out string) map[int]bool {
	used := map[int]bool{}
	for _, f := range strings.Fields(out) {
		if a, ok := strings.CutPrefix(f, "10."); ok {
			if o, _, ok := strings.Cut(a, "."); ok {
				if v, err := strconv.Atoi(o); err == nil {
					used[v] = true
				}
			}
		}
	}
	return used
}

// freeOctet picks a second octet from 100 to 199 that no address of this
// namespace uses yet (another cluster's, or anything else's), starting at
// a place that depends on the pid so that most picks succeed first time.
// Call it under lockNetworks.
func freeOctet(ctx context.Context) (int, error) {
	out, err := exec.CommandContext(ctx, "ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		return 0, fmt.Errorf("chaos: list addresses: %w", err)
	}
	used := usedOctets(string(out))
	start := int(int64(os.Getpid()) * 7 % 100)
	for i := range 100 {
		if o := 100 + (start+i)%100; !used[o] {
			return o, nil
		}
	}
	return 0, errors.New("chaos: no free 10.X.0.0/16 network from 10.100 to 10.199 (stale clusters? `ip netns list`)")
}

// ownerAlive says whether the process that made the network named by tag
// (what follows "flc" or "FLC-") still runs.
func ownerAlive(tag string) bool {
	if len(tag) < 2 {
		return false
	}
	pid, err := strconv.ParseInt(tag[:len(tag)-1], 36, 64)
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(int(pid), 0) == nil
}

func (n *network) ns(i int) string      { return fmt.Sprintf("%s-n%d", n.prefix, i) }
func (n *network) link(i int) string    { return fmt.Sprintf("%sn%d", n.prefix, i) } // ≤ 15 bytes
func (n *network) addr(i int) string    { return fmt.Sprintf("10.%d.%d.2", n.net, i) }
func (n *network) gateway(i int) string { return fmt.Sprintf("10.%d.%d.1", n.net, i) }
func (n *network) subnet() string       { return fmt.Sprintf("10.%d.0.0/16", n.net) }
func (n *network) hostAddr() string     { return fmt.Sprintf("10.%d.0.1", n.net) } // containers' gateway
func (n *network) tag() string          { return strings.TrimPrefix(n.prefix, "flc") }

// storeHost is the address of the test's namespace that every node
// reaches (where the S3 server listens).
func (n *network) storeHost() string {
	if n.docker {
		return n.hostAddr()
	}
	return n.gateway(1)
}

// setUp creates the namespaces, links and routes, or the Docker network,
// and the filter chain.
func (n *network) setUp(ctx context.Context, docker bool) error {
	if err := run(ctx, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		return err
	}
	// The octet is picked and taken (by the first address made with it)
	// under the machine-wide lock.
	unlock, err := lockNetworks()
	if err != nil {
		return err
	}
	err = func() error {
		defer unlock()
		if n.net, err = freeOctet(ctx); err != nil {
			return err
		}
		if docker {
			return n.setUpDocker(ctx)
		}
		return n.setUpNamespaces(ctx)
	}()
	if err != nil {
		return err
	}
	return n.setUpChain(ctx)
}

// setUpNamespaces makes a namespace per node, linked to ours.
func (n *network) setUpNamespaces(ctx context.Context) error {
	for i := 1; i <= n.nodes; i++ {
		ns := n.ns(i)
		steps := [][]string{
			{"ip", "netns", "add", ns},
			{"ip", "link", "add", n.link(i), "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"ip", "addr", "add", n.gateway(i) + "/30", "dev", n.link(i)},
			{"ip", "link", "set", n.link(i), "up"},
			{"ip", "netns", "exec", ns, "ip", "addr", "add", n.addr(i) + "/30", "dev", "eth0"},
			{"ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up"},
			{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
			{"ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", n.gateway(i)},
		}
		for _, s := range steps {
			if err := run(ctx, s[0], s[1:]...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n *network) setUpChain(ctx context.Context) error {
	// Our chain decides every packet between two of our nodes: drops for
	// the partitions first, then accept (the host's FORWARD policy may be
	// DROP, as Docker sets it).
	for _, s := range [][]string{
		{"iptables", "-w", "-N", n.chain},
		{"iptables", "-w", "-A", n.chain, "-j", "ACCEPT"},
		{"iptables", "-w", "-I", "FORWARD", "1", "-s", n.subnet(), "-d", n.subnet(), "-j", n.chain},
	} {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// tearDown removes everything setUp made; it goes on past errors and
// returns the first.
func (n *network) tearDown(ctx context.Context) error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	_ = run(ctx, "iptables", "-w", "-D", "FORWARD", "-s", n.subnet(), "-d", n.subnet(), "-j", n.chain)
	_ = run(ctx, "iptables", "-w", "-F", n.chain)
	if err := run(ctx, "iptables", "-w", "-X", n.chain); err != nil {
		keep(err)
	}
	_ = n.unblockStore(ctx)
	if n.docker {
		if err := n.tearDownDocker(ctx); err != nil {
			keep(err)
		}
		return first
	}
	for i := 1; i <= n.nodes; i++ {
		if err := run(ctx, "ip", "netns", "del", n.ns(i)); err != nil {
			keep(err)
		}
		_ = run(ctx, "ip", "link", "del", n.link(i)) // gone with the namespace, normally
	}
	return first
}

// cut drops the packets from node a to node b (one way).
func (n *network) cut(ctx context.Context, a, b int) error {
	return run(ctx, "iptables", "-w", "-I", n.chain, "1", "-s", n.addr(a), "-d", n.addr(b), "-j", "DROP")
}

// heal removes every cut.
func (n *network) heal(ctx context.Context) error {
	if err := run(ctx, "iptables", "-w", "-F", n.chain); err != nil {
		return err
	}
	return run(ctx, "iptables", "-w", "-A", n.chain, "-j", "ACCEPT")
}

// loss drops percent of the packets from and to node i between nodes
// (iptables' statistic match: works where the kernel has no netem).
func (n *network) loss(ctx context.Context, i int, percent float64) error {
	p := fmt.Sprintf("%.4f", percent/100)
	for _, dir := range []string{"-s", "-d"} {
		if err := run(ctx, "iptables", "-w", "-I", n.chain, "1", dir, n.addr(i), "-m", "statistic", "--mode", "random",
			"--probability", p, "-j", "DROP"); err != nil {
			return err
		}
	}
	return nil
}

// tcDevice is one end of a node's link: the tc command that reaches its
// namespace, and the device's name there.
type tcDevice struct {
	tc  []string
	dev string
}

// links are both ends of node i's link: ours and the node's eth0.
func (n *network) links(ctx context.Context, i int) ([]tcDevice, error) {
	if !n.docker {
		return []tcDevice{{[]string{"tc"}, n.link(i)}, {[]string{"tc", "-n", n.ns(i)}, "eth0"}}, nil
	}
	// A container's eth0 is "eth0@ifK", K the index of our end.
	pid, err := n.containerPid(ctx, i)
	if err != nil || pid == 0 {
		return nil, fmt.Errorf("chaos: node %d's container does not run (%v)", i, err)
	}
	enter := []string{"nsenter", "-t", strconv.Itoa(pid), "-n"}
	out, err := output(ctx, enter[0], append(enter[1:], "ip", "-o", "link", "show", "eth0")...)
	if err != nil {
		return nil, err
	}
	_, peer, ok := strings.Cut(strings.Fields(out + " x x")[1], "@if")
	if !ok {
		return nil, fmt.Errorf("chaos: node %d's eth0 names no peer: %q", i, out)
	}
	links, err := output(ctx, "ip", "-o", "link", "show")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(links, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == peer+":" {
			host, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			return []tcDevice{{[]string{"tc"}, host}, {append(enter, "tc"), "eth0"}}, nil
		}
	}
	return nil, fmt.Errorf("chaos: node %d: no link %s here", i, peer)
}

// qdisc runs `tc qdisc VERB dev DEV SPEC...` where the device is.
func (d tcDevice) qdisc(ctx context.Context, verb string, spec ...string) error {
	args := append(append([]string{}, d.tc[1:]...), "qdisc", verb, "dev", d.dev)
	return run(ctx, d.tc[0], append(args, spec...)...)
}

// hasNetem says whether the kernel has tc's netem qdisc.
func (n *network) hasNetem(ctx context.Context) bool {
	devs, err := n.links(ctx, 1)
	if err != nil {
		return false
	}
	err = devs[0].qdisc(ctx, "add", "root", "netem", "delay", "1ms")
	if err == nil {
		_ = devs[0].qdisc(ctx, "del", "root")
	}
	return err == nil
}

// netem sets latency and loss on node i's link, both ways; zero clears it.
func (n *network) netem(ctx context.Context, i int, delay time.Duration, lossPercent float64) error {
	devs, err := n.links(ctx, i)
	if err != nil {
		return err
	}
	for _, d := range devs {
		_ = d.qdisc(ctx, "del", "root")
		if delay == 0 && lossPercent == 0 {
			continue
		}
		if err := d.qdisc(ctx, "add", "root", "netem",
			"delay", fmt.Sprintf("%dms", delay.Milliseconds()), "loss", fmt.Sprintf("%.1f%%", lossPercent)); err != nil {
			return err
		}
	}
	return nil
}

// blockStore makes the S3 server at port on the test's namespace
// unreachable from every node; unblockStore lets it be reached again.
func (n *network) blockStore(ctx context.Context, port int) error {
	return run(ctx, "iptables", "-w", "-I", "INPUT", "1", "-s", n.subnet(), "-p", "tcp", "--dport", fmt.Sprint(port),
		"-m", "comment", "--comment", n.chain, "-j", "DROP")
}

func (n *network) unblockStore(ctx context.Context) error {
	// Delete every rule carrying our comment.
	out, err := exec.CommandContext(ctx, "iptables", "-w", "-S", "INPUT").Output()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, n.chain) || !strings.HasPrefix(line, "-A ") {
			continue
		}
		args := append([]string{"-w", "-D"}, strings.Fields(strings.TrimPrefix(line, "-A "))...)
		for i, a := range args {
			args[i] = strings.Trim(a, `"`)
		}
		if err := run(ctx, "iptables", args...); err != nil {
			return err
		}
	}
	return nil
}

// sweepStale removes namespaces and chains an earlier run of this suite
// left behind (a killed test binary never ran its cleanup).
func sweepStale(ctx context.Context) {
	out, _ := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "flc") {
			continue
		}
		if tag, _, _ := strings.Cut(strings.TrimPrefix(f[0], "flc"), "-"); !ownerAlive(tag) {
			_ = run(ctx, "ip", "netns", "del", f[0])
		}
	}
	rules, _ := exec.CommandContext(ctx, "iptables", "-w", "-S", "FORWARD").Output()
	for _, line := range strings.Split(string(rules), "\n") {
		i := strings.Index(line, "-j FLC-")
		if !strings.HasPrefix(line, "-A FORWARD") || i < 0 || ownerAlive(strings.Fields(line[i+len("-j FLC-"):])[0]) {
			continue
		}
		_ = run(ctx, "iptables", append([]string{"-w", "-D"}, strings.Fields(strings.TrimPrefix(line, "-A "))...)...)
	}
	chains, _ := exec.CommandContext(ctx, "iptables", "-w", "-S").Output()
	for _, line := range strings.Split(string(chains), "\n") {
		if c, ok := strings.CutPrefix(line, "-N FLC-"); ok && !ownerAlive(c) {
			_ = run(ctx, "iptables", "-w", "-F", "FLC-"+c)
			_ = run(ctx, "iptables", "-w", "-X", "FLC-"+c)
		}
	}
}
