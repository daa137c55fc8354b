package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// The root account of a versitygw the tests start.
const (
	gatewayAccessKey = "floe-test-access"
	gatewaySecretKey = "floe-test-secret"
)

const (
	// gatewayStartTimeout bounds one start, up to its first answer.
	gatewayStartTimeout = 30 * time.Second
	// gatewayStartAttempts bounds the starts: the port picked free may
	// be taken by someone else before versitygw binds it.
	gatewayStartAttempts = 3
	// gatewayPollInterval is how often a start asks whether it answers.
	gatewayPollInterval = 20 * time.Millisecond
	// gatewayOutputBytes bounds the output kept for a failed start.
	gatewayOutputBytes = 8 << 10
)

// gateway is a versitygw process serving a temporary folder (posix
// backend) on a loopback port.
type gateway struct {
	addr   string
	dir    string
	output headWriter
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has exited
}

// startGateway starts versitygw (the binary bin) and waits until it answers.
func startGateway(ctx context.Context, bin string) (*gateway, error) {
	var errs []error
	for range gatewayStartAttempts {
		gw, err := tryGateway(ctx, bin)
		if err == nil {
			return gw, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("s3test: start versitygw: %w", errors.Join(errs...))
}

func tryGateway(ctx context.Context, bin string) (*gateway, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-versitygw-")
	if err != nil {
		return nil, err
	}
	gw := &gateway{addr: addr, dir: dir, output: headWriter{max: gatewayOutputBytes}, done: make(chan struct{})}
	gw.cmd = exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
	gw.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+gatewayAccessKey, "ROOT_SECRET_KEY="+gatewaySecretKey)
	gw.cmd.Stdout, gw.cmd.Stderr = &gw.output, &gw.output
	dieWithParent(gw.cmd)
	if err := gw.run(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gatewayStartTimeout)
	defer cancel()
	if err := gw.waitAnswer(ctx); err != nil {
		return nil, errors.Join(err, gw.close())
	}
	return gw, nil
}

// run starts the process from a goroutine locked to its OS thread for the
// process's life: the kernel's parent-death signal (dieWithParent) is tied
// to the thread that started the child, not to the test process, and the Go
// runtime may end an unlocked thread.
func (gw *gateway) run() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(gw.done)
		if err := gw.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		gw.cmd.Wait()
	}()
	return <-started
}

// waitAnswer waits until the gateway answers HTTP (any status: an
// unsigned request is refused), or its process exits, or ctx ends.
func (gw *gateway) waitAnswer(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	tick := time.NewTicker(gatewayPollInterval)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+gw.addr+"/", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-gw.done:
			return fmt.Errorf("versitygw on %s exited: %v: %s", gw.addr, gw.cmd.ProcessState, gw.output.String())
		case <-ctx.Done():
			return fmt.Errorf("versitygw on %s does not answer: %w", gw.addr, ctx.Err())
		case <-tick.C:
		}
	}
}

// close kills the process, waits for it and removes its folder.
func (gw *gateway) close() error {
	if err := gw.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("s3test: kill versitygw: %w", err)
	}
	<-gw.done
	return os.RemoveAll(gw.dir)
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
