package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// densityStopTimeout bounds a node's clean stop after SIGTERM; past it the
// node is killed and the benchmark fails.
const densityStopTimeout = 30 * time.Second

// densityNode is a `floe dev` child process the density benchmark
// measures from outside, as an operator would: /proc for CPU, memory and
// file descriptors, the pprof endpoint for goroutines.
type densityNode struct {
	binary, dataDir string
	addr, httpAddr  string
	stderr          io.Writer
	cmd             *exec.Cmd
	exited          chan struct{} // closed once cmd has exited
	waitErr         error         // cmd.Wait's error, set before exited closes
}

// newDensityNode picks free ports for a node on dataDir; start runs it.
// The ports stay the same across restarts: the metadata remembers the
// node's address.
func newDensityNode(binary, dataDir string, stderr io.Writer) (*densityNode, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	return &densityNode{binary: binary, dataDir: dataDir, addr: addr, httpAddr: httpAddr, stderr: stderr}, nil
}

// freeLoopbackAddr is a loopback address with a port free right now.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start runs `floe dev` on the node's folder and ports.
func (n *densityNode) start() error {
	n.cmd = exec.Command(n.binary, "dev", "--data-dir", n.dataDir, "--listen", n.addr, "--http", n.httpAddr, "--log-level", "error")
	n.cmd.Stderr = n.stderr
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("start %s dev: %w", n.binary, err)
	}
	n.exited = make(chan struct{})
	go func() {
		n.waitErr = n.cmd.Wait()
		close(n.exited)
	}()
	return nil
}

// whileRunning is ctx, cancelled also when the node exits.
func (n *densityNode) whileRunning(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	exited := n.exited
	go func() {
		select {
		case <-exited:
			cancel(fmt.Errorf("the node exited: %v", n.waitErr))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// stop sends SIGTERM and waits for a clean exit, killing the node if it
// takes longer than densityStopTimeout.
func (n *densityNode) stop() error {
	if n.cmd == nil {
		return nil
	}
	select {
	case <-n.exited:
		return n.waitErr
	default:
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	t := time.NewTimer(densityStopTimeout)
	defer t.Stop()
	select {
	case <-n.exited:
		return n.waitErr
	case <-t.C:
		n.cmd.Process.Kill()
		<-n.exited
		return fmt.Errorf("the node did not stop within %v of SIGTERM; killed", densityStopTimeout)
	}
}

// cpuTime is the CPU time the node used so far, user and system.
func (n *densityNode) cpuTime() (time.Duration, error) {
	secs, err := procCPUSeconds(n.cmd.Process.Pid)
	return time.Duration(secs * float64(time.Second)), err
}

// rssBytes is the node's resident memory, VmRSS.
func (n *densityNode) rssBytes() (int64, error) { return procRSSBytes(n.cmd.Process.Pid) }

// procRSSBytes is a process's resident memory, VmRSS of /proc/PID/status.
func procRSSBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status VmRSS: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc status: no VmRSS")
}

// openFiles is the number of the node's open file descriptors.
func (n *densityNode) openFiles() (int, error) {
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(n.cmd.Process.Pid), "fd"))
	return len(fds), err
}

// goroutines is the node's goroutine count, from the first line of its
// goroutine profile: "goroutine profile: total N".
func (n *densityNode) goroutines(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.httpAddr+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	total, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile starts with %q", line)
	}
	return strconv.Atoi(total)
}

// ready reports whether the node answers /readyz with 200: its tablet role
// is registered and follows the metadata, so tables can be placed on it.
func (n *densityNode) ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.httpAddr+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("not ready: %s", strings.TrimSpace(string(body)))
	}
	return nil
}
