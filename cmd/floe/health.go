package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// errUnhealthy: `floe health` got an answer other than 200.
var errUnhealthy = errors.New("not ready")

// healthSpec is `floe health`: GET /readyz (or /healthz with --live) of a
// node's HTTP port, exit 0 on 200 and 1 otherwise. It needs no shell and
// no curl, so a container built FROM scratch can run it as its health
// check.
func healthSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "health [--http ADDR] [--live] [--timeout 2s]",
		summary: "check a node's /readyz over HTTP (exit 0 ready, 1 not): a container health check",
		define: func(fs *flag.FlagSet) runFunc {
			addr := fs.String("http", "127.0.0.1:8080", "the node's --http address")
			live := fs.Bool("live", false, "check /healthz (the process is up) instead of /readyz")
			timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
			return func(ctx context.Context, pos []string) error {
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				if *timeout <= 0 {
					return fmt.Errorf("%w: --timeout must be positive", errUsage)
				}
				path := "/readyz"
				if *live {
					path = "/healthz"
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				return checkHealth(ctx, env, "http://"+*addr+path)
			}
		}}
}

// checkHealth GETs url and prints what it says: "ready" (or the /healthz
// body) on 200, the reason /readyz gives otherwise.
func checkHealth(ctx context.Context, env *cliEnv, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err // names the method and the URL
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	var ready struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
		Node   uint32 `json:"node"`
	}
	isReadyz := json.Unmarshal(body, &ready) == nil
	if resp.StatusCode != http.StatusOK {
		why := resp.Status
		if isReadyz && ready.Reason != "" {
			why = ready.Reason
		}
		return fmt.Errorf("%s: %w: %s", url, errUnhealthy, why)
	}
	if isReadyz {
		_, err = fmt.Fprintf(env.stdout, "node %d ready\n", ready.Node)
	} else {
		_, err = env.stdout.Write(body)
	}
	return err
}
