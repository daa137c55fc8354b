package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var containers = flag.Bool("floe.containers", false,
	"run TestComposeCluster: build the images (deploy/build.sh) and run deploy/compose.yaml on the Docker engine")

// composeCluster is one run of deploy/compose.yaml under a project name of
// its own, on ports and a network of its own.
type composeCluster struct {
	t       *testing.T
	cmd     []string // docker compose, or docker-compose
	project string
	env     []string
	servers string // the published RPC ports, for --server
}

// dockerCompose finds a compose command the engine answers to, or skips.
func dockerCompose(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command on PATH")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers: %v: %s", err, bytes.TrimSpace(out))
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if exec.Command("docker-compose", "version").Run() == nil {
		return []string{"docker-compose"}
	}
	t.Skip("neither `docker compose` nor `docker-compose` is installed")
	return nil
}

// run runs a command with the cluster's environment and returns its
// combined output, failing the test when it fails.
func (cc *composeCluster) run(timeout time.Duration, name string, args ...string) string {
	cc.t.Helper()
	out, err := cc.try(timeout, name, args...)
	if err != nil {
		cc.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func (cc *composeCluster) try(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), cc.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// compose runs a compose subcommand on the project.
func (cc *composeCluster) compose(timeout time.Duration, args ...string) string {
	cc.t.Helper()
	full := append(append(cc.cmd[1:], "-p", cc.project, "-f", filepath.Join("deploy", "compose.yaml")), args...)
	return cc.run(timeout, cc.cmd[0], full...)
}

// container is the id of a service's container.
func (cc *composeCluster) container(service string) string {
	cc.t.Helper()
	return strings.TrimSpace(cc.compose(30*time.Second, "ps", "-q", service))
}

// health is the container's health status (healthy, starting, unhealthy)
// or its state when it is not running.
func (cc *composeCluster) health(id string) string {
	out, err := cc.try(10*time.Second, "docker", "inspect", "-f", "{{if .State.Running}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}", id)
	if err != nil {
		return "unknown: " + out
	}
	return strings.TrimSpace(out)
}

func (cc *composeCluster) waitHealthy(timeout time.Duration, ids ...string) {
	cc.t.Helper()
	waitFor(cc.t, timeout, fmt.Sprintf("containers %v healthy", ids), func() bool {
		for _, id := range ids {
			if cc.health(id) != "healthy" {
				return false
			}
		}
		return true
	})
}

// cli runs the host's floe binary against the published ports.
func (cc *composeCluster) cli(stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, floeBin, append(args, "--server", cc.servers)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func (cc *composeCluster) mustCLI(stdin string, args ...string) string {
	cc.t.Helper()
	out, errOut, err := cc.cli(stdin, args...)
	if err != nil {
		cc.t.Fatalf("floe %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (cc *composeCluster) status() drainStatus {
	cc.t.Helper()
	var st drainStatus
	out := cc.mustCLI("", "cluster", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		cc.t.Fatalf("cluster status: %v\n%s", err, out)
	}
	return st
}

func rowsJSON(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "{\"id\":%d,\"item\":\"row %d\"}\n", i, i)
	}
	return b.String()
}

// TestComposeCluster builds the images and runs deploy/compose.yaml as
// the container walkthrough of docs/operations.md does: three nodes and an S3 server come
// up healthy, a table takes writes and reads through the published ports,
// a killed node's leadership moves and writes go on within seconds, and
// the node restarted rejoins every ISR. The project is torn down (with
// its volumes) however the test ends. It needs a Docker engine and
// -floe.containers (the first build of versitygw takes minutes).
func TestComposeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs containers")
	}
	if !*containers {
		t.Skip("runs only with -floe.containers (builds the images and runs deploy/compose.yaml on the Docker engine)")
	}
	started := time.Now()
	cc := &composeCluster{t: t, cmd: dockerCompose(t), project: fmt.Sprintf("floe-ctest-%d", os.Getpid())}
	port := func() string { return strings.TrimPrefix(freeAddr(t), "127.0.0.1:") }
	var servers []string
	cc.env = []string{"FLOE_TAG=ctest", fmt.Sprintf("FLOE_NET=172.30.%d", rand.IntN(250)+1), "FLOE_S3_PORT=" + port()}
	for i := 1; i <= 3; i++ {
		rpc := port()
		servers = append(servers, "127.0.0.1:"+rpc)
		cc.env = append(cc.env, fmt.Sprintf("FLOE_RPC_PORT%d=%s", i, rpc), fmt.Sprintf("FLOE_HTTP_PORT%d=%s", i, port()))
	}
	cc.servers = strings.Join(servers, ",")

	cc.run(10*time.Minute, "bash", filepath.Join("deploy", "build.sh"))
	t.Logf("images built in %v", time.Since(started).Round(100*time.Millisecond))

	t.Cleanup(func() {
		if t.Failed() {
			out, _ := cc.try(time.Minute, cc.cmd[0], append(cc.cmd[1:], "-p", cc.project, "-f",
				filepath.Join("deploy", "compose.yaml"), "logs", "--no-color", "--tail", "100")...)
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := cc.try(2*time.Minute, cc.cmd[0], append(cc.cmd[1:], "-p", cc.project, "-f",
			filepath.Join("deploy", "compose.yaml"), "down", "-v", "--remove-orphans")...); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	upAt := time.Now()
	cc.compose(2*time.Minute, "up", "-d")
	nodes := []string{cc.container("node1"), cc.container("node2"), cc.container("node3")}
	cc.waitHealthy(90*time.Second, nodes...)
	t.Logf("healthy %v after up", time.Since(upAt).Round(100*time.Millisecond))
	cc.mustCLI("", "cluster", "status", "--wait", "30s")

	cc.mustCLI("", "db", "create", "shop")
	cc.mustCLI("", "table", "create", "shop.events", "--schema", "id BIGINT NOT NULL, item STRING",
		"--buckets", "3", "--replication", "3")
	cc.mustCLI(rowsJSON(0, 100), "produce", "shop.events")

	st := cc.status()
	var victim uint32
	for _, b := range st.Buckets {
		if b.Database == "shop" && b.Table == "events" && b.Bucket == 0 {
			victim = b.Leader
		}
	}
	if victim < 1 || victim > 3 {
		t.Fatalf("bucket 0's leader: %d (%+v)", victim, st.Buckets)
	}
	killed := nodes[victim-1]
	cc.run(30*time.Second, "docker", "kill", killed)
	killedAt := time.Now()

	// Writes succeed again within seconds (one produce: its writer retries
	// through the failover, idempotently), and bucket 0 has a new leader.
	cc.mustCLI(rowsJSON(100, 200), "produce", "shop.events", "--timeout", "30s")
	recovered := time.Since(killedAt)
	if recovered > 15*time.Second {
		t.Fatalf("writes resumed %v after the kill, want within seconds", recovered)
	}
	st = cc.status()
	for _, b := range st.Buckets {
		if b.Database == "shop" && (b.Leader == victim || b.Offline) {
			t.Fatalf("after the kill of node %d: bucket %d %+v", victim, b.Bucket, b)
		}
	}
	t.Logf("node %d killed: writes went on after %v; leaders now %v", victim, recovered.Round(10*time.Millisecond), leaders(st))

	cc.run(30*time.Second, "docker", "start", killed)
	cc.waitHealthy(60*time.Second, killed)
	waitFor(t, 60*time.Second, "every ISR whole again", func() bool {
		out, _, err := cc.cli("", "cluster", "status", "-o", "json")
		var st drainStatus
		if err != nil || json.Unmarshal([]byte(out), &st) != nil {
			return false
		}
		for _, b := range st.Buckets {
			if b.UnderReplicated || b.Offline {
				return false
			}
		}
		return len(st.Buckets) == 3
	})

	ids := make([]int64, 200)
	for i := range ids {
		ids[i] = int64(i)
	}
	checkReadOnce(t, cc.mustCLI("", "consume", "shop.events", "--no-meta"), ids)
	t.Logf("whole run %v", time.Since(started).Round(100*time.Millisecond))
}

// leaders lists the buckets' leaders, by table and bucket.
func leaders(st drainStatus) []string {
	var out []string
	for _, b := range st.Buckets {
		out = append(out, fmt.Sprintf("%s.%s/%d:%d", b.Database, b.Table, b.Bucket, b.Leader))
	}
	return out
}
