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

	"github.com/floedb/floe/client"
)

// errUnhealthy: `floe health` got an answer other than 200.
var errUnhealthy = errors.New("not ready")

// healthSpec is `floe health`: GET /readyz (or /healthz with --live) of a
// node's HTTP port, exit 0 on 200 and 1 otherwise. It needs no shell and
// no curl, so a container built FROM scratch can run it as its health
// check.
func healthSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "health [--http ADDR] [--live] [--timeout 2s] [--tls-ca FILE]",
		summary: "check a node's /readyz over HTTP (exit 0 ready, 1 not): a container health check",
		define: func(fs *flag.FlagSet) runFunc {
			addr := fs.String("http", "127.0.0.1:8080", "the node's --http address")
			live := fs.Bool("live", false, "check /healthz (the process is up) instead of /readyz")
			timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
			ca := fs.String("tls-ca", "", "the cluster's CA: the node serves HTTPS (it runs with --tls-cert)")
			var output string
			outputVar(fs, &output, `{"url", "status", "ready", "reason", "node"}`)
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
				hc := http.DefaultClient
				scheme := "http://"
				if *ca != "" {
					tc, err := client.TLSFromFiles(*ca, "", "")
					if err != nil {
						return err
					}
					hc = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
					scheme = "https://"
				}
				return checkHealth(ctx, env, hc, scheme+*addr+path, output == "json")
			}
		}}
}

// healthAnswer is what `floe health -o json` prints, whatever the status.
type healthAnswer struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	// Ready, Reason and Node are /readyz's answer; Body the text of
	// another (/healthz).
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
	Node   uint32 `json:"node,omitempty"`
	Body   string `json:"body,omitempty"`
}

// checkHealth GETs url and prints what it says: "ready" (or the /healthz
// body) on 200, the reason /readyz gives otherwise; asJSON prints the
// answer as a healthAnswer, also when it fails the check.
func checkHealth(ctx context.Context, env *cliEnv, hc *http.Client, url string, asJSON bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	resp, err := hc.Do(req)
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
	if asJSON {
		answer := healthAnswer{URL: url, Status: resp.StatusCode, Ready: resp.StatusCode == http.StatusOK}
		if isReadyz {
			answer.Ready, answer.Reason, answer.Node = ready.Ready, ready.Reason, ready.Node
		} else {
			answer.Body = string(body)
		}
		if err := printJSON(env, answer); err != nil {
			return err
		}
	}
	if resp.StatusCode != http.StatusOK {
		why := resp.Status
		if isReadyz && ready.Reason != "" {
			why = ready.Reason
		}
		return fmt.Errorf("%s: %w: %s", url, errUnhealthy, why)
	}
	switch {
	case asJSON:
	case isReadyz:
		_, err = fmt.Fprintf(env.stdout, "node %d ready\n", ready.Node)
	default:
		_, err = env.stdout.Write(body)
	}
	return err
}
