package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/server"
	"github.com/spf13/pflag"
)

func TestClusterReadiness(t *testing.T) {
	tablet := func(id uint32, alive bool) client.Node {
		return client.Node{ID: id, Roles: []string{"meta", "tablet"}, Alive: alive}
	}
	meta := client.Node{ID: 9, Roles: []string{"meta"}, Alive: false}
	for _, tc := range []struct {
		name string
		st   client.ClusterStatus
		why  string // "" = ready
	}{
		{"ready", client.ClusterStatus{Leader: 1, Nodes: []client.Node{tablet(1, true), tablet(2, true), meta}}, ""},
		{"no leader", client.ClusterStatus{Nodes: []client.Node{tablet(1, true)}}, "no metadata leader"},
		{"no tablet nodes", client.ClusterStatus{Leader: 9, Nodes: []client.Node{meta}}, "no tablet nodes are registered"},
		{"a tablet node down", client.ClusterStatus{Leader: 1, Nodes: []client.Node{tablet(1, true), tablet(2, false), tablet(3, false)}},
			"tablet nodes not live: 2, 3 (of 3 registered)"},
		// A fresh three-node cluster whose first node has registered: not
		// ready until the other founders have too.
		{"founders not registered", client.ClusterStatus{Leader: 1, Voters: voters(1, 2, 3), Nodes: []client.Node{tablet(1, true)}},
			"metadata voters not registered yet: 2, 3 (1 of 3 registered)"},
		{"founders registered", client.ClusterStatus{Leader: 1, Voters: append(voters(1, 2, 3), client.Voter{ID: 4, Suffrage: "nonvoter"}),
			Nodes: []client.Node{tablet(1, true), tablet(2, true), tablet(3, true)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, why := clusterReadiness(&tc.st)
			if ready != (tc.why == "") || why != tc.why {
				t.Fatalf("clusterReadiness = %v %q, want %q", ready, why, tc.why)
			}
		})
	}
}

// voters are metadata voters with the given ids.
func voters(ids ...uint32) []client.Voter {
	var out []client.Voter
	for _, id := range ids {
		out = append(out, client.Voter{ID: id, Suffrage: "voter", State: "follower"})
	}
	return out
}

func TestWaitFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr bool
		want    string
	}{
		{[]string{"--wait"}, false, "1m0s"},
		{[]string{"--wait=5s"}, false, "5s"},
		{[]string{"--wait=soon"}, true, ""},
		{[]string{"--wait=-1s"}, true, ""},
	} {
		var w waitFlag
		gofs := flag.NewFlagSet("t", flag.ContinueOnError)
		gofs.Var(&w, "wait", "")
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		addGoFlags(fs, gofs)
		err := fs.Parse(tc.args)
		if (err != nil) != tc.wantErr || (!tc.wantErr && (!w.set || w.String() != tc.want)) {
			t.Errorf("%v: err %v, wait %q, want %q", tc.args, err, w.String(), tc.want)
		}
	}
}

// syncBuffer is an output a running command writes to while the test
// reads it; changed is signalled on every write.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output matches re, for at most a minute, and
// returns the match.
func (b *syncBuffer) waitFor(t *testing.T, re *regexp.Regexp, exited <-chan int) []string {
	t.Helper()
	giveUp := time.After(time.Minute)
	for {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			return m
		}
		select {
		case <-b.changed:
		case code := <-exited:
			t.Fatalf("exited with %d before printing %v:\n%s", code, re, b.String())
		case <-giveUp:
			t.Fatalf("gave up waiting for %v:\n%s", re, b.String())
		}
	}
}

// startDev runs `floe dev` on a free port until the test ends and returns
// its address once it says it is ready.
func startDev(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := newSyncBuffer(), newSyncBuffer()
	exited := make(chan int, 1)
	// Made before the cleanup below is registered, so it is removed after
	// the node has stopped.
	dir := t.TempDir()
	go func() {
		exited <- run(ctx, &cliEnv{stdout: out, stderr: errOut, stdin: strings.NewReader("")},
			[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", dir})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("floe dev exited with %d: %s", code, errOut.String())
		}
	})
	m := out.waitFor(t, regexp.MustCompile(`ready in .*\n\s+address:\s+(\S+)`), exited)
	return m[1]
}

// TestDevReadyMeansTablesCanBeCreated: as soon as `floe dev` says it is
// ready, a table can be created (its tablet node is registered and
// follows the metadata) and `cluster status` says ready.
func TestDevReadyMeansTablesCanBeCreated(t *testing.T) {
	addr := startDev(t)
	if code, _, errOut := runCLI(t, "", "db", "create", "d", "--server", addr); code != 0 {
		t.Fatalf("db create: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "table", "create", "d.t", "--schema", "id BIGINT NOT NULL", "--server", addr); code != 0 {
		t.Fatalf("table create right after ready: %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "cluster", "status", "--server", addr)
	if code != 0 || !regexp.MustCompile(`(?m)^ready\s+yes$`).MatchString(out) {
		t.Fatalf("cluster status: %d\n%s%s", code, out, errOut)
	}
}

func TestClusterStatusWait(t *testing.T) {
	addr := startDev(t)
	code, out, errOut := runCLI(t, "", "cluster", "status", "--wait", "30s", "--server", addr)
	if code != 0 || !regexp.MustCompile(`(?m)^ready\s+yes$`).MatchString(out) {
		t.Fatalf("cluster status --wait 30s: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "cluster", "status", "--wait", "--output", "json", "--server", addr)
	if code != 0 || !strings.Contains(out, `"ready": true`) {
		t.Fatalf("cluster status --wait --output json: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "", "cluster", "status", "--wait", "later", "--server", addr); code != 2 || !strings.Contains(errOut, "positive duration") {
		t.Fatalf("--wait later: %d %s", code, errOut)
	}
}

// TestClusterStatusWaitFailsWithTheReason: a cluster of one meta-only
// node has a leader but no tablet node; the wait reports that as it goes
// and fails with it when the time is up.
func TestClusterStatusWaitFailsWithTheReason(t *testing.T) {
	srv, err := server.New(server.Config{NodeID: 1, Roles: []string{server.RoleMeta}, DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", Gossip: "127.0.0.1:0", BootstrapExpect: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("node stopped: %v", err)
	}
	code, _, errOut := runCLI(t, "", "cluster", "status", "--wait=500ms", "--server", srv.Addr())
	if code != 1 || !strings.Contains(errOut, "waiting for the cluster: no tablet nodes are registered") ||
		!strings.Contains(errOut, "cluster not ready after 500ms: no tablet nodes are registered") {
		t.Fatalf("cluster status --wait on a cluster without tablet nodes: %d\n%s", code, errOut)
	}
}

// TestClusterStatusNamesLostQuorum: with two of three metadata voters
// stopped, the status calls time out on the survivor; `cluster status`
// says it has no metadata leader (what it was waiting for), with or
// without --wait, not "context deadline exceeded".
func TestClusterStatusNamesLostQuorum(t *testing.T) {
	cl, err := testcluster.Start(t.Context(), testcluster.Options{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	for _, nd := range cl.Nodes()[1:] {
		if err := nd.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	addr := cl.Nodes()[0].Addr()
	code, _, errOut := runCLI(t, "", "cluster", "status", "--wait", "3s", "--server", addr)
	if code != 1 || !strings.Contains(errOut, "cluster not ready after 3s: no metadata leader") || strings.Contains(errOut, "deadline") {
		t.Fatalf("cluster status --wait 3s without a quorum: %d\n%s", code, errOut)
	}
	t.Log(errOut)
	code, _, errOut = runCLI(t, "", "cluster", "status", "--timeout", "3s", "--server", addr)
	if code != 1 || !strings.Contains(errOut, "no metadata leader") || strings.Contains(errOut, "deadline") {
		t.Fatalf("cluster status without a quorum: %d\n%s", code, errOut)
	}
	t.Log(errOut)
}

// TestTableCreateWarnsOfFewerReplicas: a table that asks for the default
// replication (3) while one of the three nodes is down gets 2 replicas
// and a warning on stderr that says so; on a one-node cluster, where 1 is
// all there can be, it gets none.
func TestTableCreateWarnsOfFewerReplicas(t *testing.T) {
	cl, err := testcluster.Start(t.Context(), testcluster.Options{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.Nodes()[2].Stop(); err != nil {
		t.Fatal(err)
	}
	addr := cl.Nodes()[0].Addr()
	if code, _, errOut := runCLI(t, "", "db", "create", "d", "--server", addr); code != 0 {
		t.Fatalf("db create: %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "table", "create", "d.t", "--schema", "id BIGINT NOT NULL", "--server", addr)
	if code != 0 || !strings.Contains(out, "replication 2") ||
		!strings.Contains(errOut, "warning: table d.t has replication 2, not 3: only 2 of the cluster's 3 tablet nodes were registered and live") {
		t.Fatalf("table create with a node down: %d\n%s%s", code, out, errOut)
	}

	dev := startDev(t)
	if code, _, errOut := runCLI(t, "", "db", "create", "d", "--server", dev); code != 0 {
		t.Fatalf("db create: %d %s", code, errOut)
	}
	code, out, errOut = runCLI(t, "", "table", "create", "d.t", "--schema", "id BIGINT NOT NULL", "--server", dev)
	if code != 0 || errOut != "" {
		t.Fatalf("table create on floe dev: %d\n%s%s", code, out, errOut)
	}
}
