package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/testkit/testcluster"
)

// statusJSON is `floe cluster status -o json` as a harness reads it.
type statusJSON struct {
	Leader  uint32                `json:"leader"`
	Ready   bool                  `json:"ready"`
	Nodes   []client.Node         `json:"nodes"`
	Buckets []client.BucketStatus `json:"buckets"`
	Under   int                   `json:"under_replicated_buckets"`
	Offline int                   `json:"offline_buckets"`
}

// status runs `cluster status -o json` and returns the buckets of the
// test's table name, by number.
func (fc *testCluster) status(name string) (statusJSON, []client.BucketStatus) {
	fc.t.Helper()
	out, _ := fc.mustRun("", "cluster", "status", "-o", "json")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		fc.t.Fatalf("%v\n%s", err, out)
	}
	var mine []client.BucketStatus
	for _, b := range st.Buckets {
		if b.Database == fc.db && b.Table == name {
			mine = append(mine, b)
		}
	}
	return st, mine
}

// TestClusterStatusBuckets: the JSON status names the metadata leader and
// every bucket with its leader, epochs, ISR, replicas and high watermark;
// the text lists buckets only with --buckets; a leader that does not
// answer costs its buckets their high watermark, not the command.
func TestClusterStatusBuckets(t *testing.T) {
	fc, table := startLogTable(t, 2, 2)
	fc.mustRun(jsonRows(0, 10), "produce", table)

	st, mine := fc.status("t")
	if st.Leader == 0 || len(mine) != 2 {
		t.Fatalf("status: leader %d, buckets of %s: %+v", st.Leader, table, mine)
	}
	var total int64
	for i, b := range mine {
		if b.Bucket != int32(i) || b.Leader == 0 || b.HighWatermark == nil || b.Error != "" || b.Offline || b.UnderReplicated ||
			len(b.ISR) != 2 || len(b.Replicas) != 2 {
			t.Fatalf("bucket %d: %+v", i, b)
		}
		total += *b.HighWatermark
	}
	if total != 10 {
		t.Fatalf("high watermarks add up to %d, want 10", total)
	}
	// A harness reads the raw document too: high_watermark is a number or
	// null, never absent.
	out, _ := fc.mustRun("", "cluster", "status", "-o", "json")
	for _, key := range []string{`"leader": `, `"leader_epoch": `, `"isr": [`, `"replicas": [`, `"high_watermark": `,
		`"under_replicated": false`, `"offline": false`, `"under_replicated_buckets": `, `"offline_buckets": `} {
		if !strings.Contains(out, key) {
			t.Fatalf("status JSON lacks %s:\n%s", key, out)
		}
	}

	text, _ := fc.mustRun("", "cluster", "status")
	if strings.Contains(text, "TABLE") || strings.Contains(text, table) {
		t.Fatalf("default text lists buckets:\n%s", text)
	}
	text, _ = fc.mustRun("", "cluster", "status", "--buckets")
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(table) + `\s+0\s+\d+\s+\d+\s+\d,\d\s+\d,\d\s+\d+\s+online$`)
	if !strings.Contains(text, "TABLE") || !row.MatchString(text) || !strings.Contains(text, "under-replicated, 0 offline") {
		t.Fatalf("--buckets:\n%s", text)
	}

	silent := mine[0].Leader
	release := fc.Node(silent).Proxy().Hold(testcluster.RPCListOffsets, testcluster.FromNodes)
	defer release()
	_, mine = fc.status("t")
	for _, b := range mine {
		if b.Leader == silent && (b.HighWatermark != nil || !strings.Contains(b.Error, "did not answer")) {
			t.Fatalf("bucket %d of the silent leader: %+v", b.Bucket, b)
		}
	}
	text, _ = fc.mustRun("", "cluster", "status", "--buckets")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(table) + `\s+0\s.*\s-\s+online \(.*did not answer`).MatchString(text) {
		t.Fatalf("--buckets with a silent leader:\n%s", text)
	}
}

// TestNodeDrain: `node drain` moves the leaderships it can and names the
// one it cannot, exiting 1 for it unless --force; `node undrain` clears
// the mark.
func TestNodeDrain(t *testing.T) {
	fc := startCluster(t)
	two := fc.createTable("two", "id BIGINT NOT NULL", 2, 2)
	one := fc.createTable("one", "id BIGINT NOT NULL", 1, 1)
	node, err := fc.WaitLeader(t.Context(), fc.db, "one", 0, func(l uint32) bool { return l != 0 })
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(node)
	t.Cleanup(func() { runCLI(t, "", "node", "undrain", id, "--server", fc.server) })

	code, out, errOut := runCLI(t, "", "node", "drain", id, "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, "leaderships not moved") || !strings.Contains(errOut, "--force") ||
		!strings.Contains(out, one+" bucket 0: not moved: not enough replicas: bucket 0 has no other live in-sync replica") ||
		!strings.Contains(out, "node "+id+" is draining: ") {
		t.Fatalf("drain: exit %d\n%s%s", code, out, errOut)
	}
	for b := range int32(2) {
		if l, err := fc.Leader(t.Context(), fc.db, "two", b); err != nil || l == node {
			t.Fatalf("%s bucket %d: leader %d (%v) after the drain of node %d", two, b, l, err, node)
		}
	}
	if code, out, errOut := runCLI(t, "", "node", "drain", id, "--force", "-o", "json", "--server", fc.server); code != 0 {
		t.Fatalf("drain --force: exit %d\n%s%s", code, out, errOut)
	} else {
		var res client.DrainResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Node.Draining || res.NotMoved() == 0 {
			t.Fatalf("drain -o json: %v\n%s", err, out)
		}
		// The node is alive: it answered the test a moment ago.
		if !res.Node.Alive {
			t.Fatalf("drain -o json says node %d is not alive:\n%s", node, out)
		}
	}
	st, _ := fc.status("one")
	for _, n := range st.Nodes {
		if n.Draining != (n.ID == node) {
			t.Fatalf("status: node %d draining %v", n.ID, n.Draining)
		}
	}
	text, _ := fc.mustRun("", "cluster", "status")
	if !regexp.MustCompile(`(?m)^` + id + `\s.*\strue\s+true$`).MatchString(text) {
		t.Fatalf("status text does not show node %s draining:\n%s", id, text)
	}

	if out, _ := fc.mustRun("", "node", "undrain", id); !strings.Contains(out, "no longer draining") {
		t.Fatalf("undrain: %s", out)
	}
	if out, _ := fc.mustRun("", "node", "undrain", id); !strings.Contains(out, "was not draining") {
		t.Fatalf("second undrain: %s", out)
	}
	if code, _, errOut := runCLI(t, "", "node", "drain", "77", "--server", fc.server); code != 1 || !strings.Contains(errOut, "node 77 is not registered") {
		t.Fatalf("drain of an unknown node: exit %d %s", code, errOut)
	}
	if code, _, _ := runCLI(t, "", "node", "drain", "x", "--server", fc.server); code != 2 {
		t.Fatalf("drain x: exit %d, want a usage mistake", code)
	}
}

// TestHealth: `floe health` exits 0 on a 200 from /readyz, 1 with the
// reason on a 503, and 1 when nothing answers.
func TestHealth(t *testing.T) {
	var notReady atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			w.Write([]byte("ok\n"))
		case !notReady.Load():
			w.Write([]byte(`{"ready":true,"reason":"","node":3}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"ready":false,"reason":"no metadata leader","node":3}`))
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if code, out, errOut := runCLI(t, "", "health", "--http", addr); code != 0 || out != "node 3 ready\n" {
		t.Fatalf("ready: exit %d %q %s", code, out, errOut)
	}
	asJSON := func(args ...string) (int, healthAnswer, jsonError) {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"health", "--http", addr, "-o", "json"}, args...)...)
		var answer healthAnswer
		var e jsonError
		if err := json.Unmarshal([]byte(out), &answer); err != nil {
			t.Fatalf("health -o json %v: stdout is not JSON (%v): %q", args, err, out)
		}
		if errOut != "" && json.Unmarshal([]byte(errOut), &e) != nil {
			t.Fatalf("health -o json %v: stderr is not JSON: %q", args, errOut)
		}
		return code, answer, e
	}
	if code, answer, _ := asJSON(); code != 0 || !answer.Ready || answer.Node != 3 || answer.Status != 200 {
		t.Fatalf("ready, -o json: exit %d %+v", code, answer)
	}
	if code, answer, _ := asJSON("--live"); code != 0 || answer.Body != "ok\n" || answer.Status != 200 {
		t.Fatalf("--live -o json: exit %d %+v", code, answer)
	}
	notReady.Store(true)
	if code, _, errOut := runCLI(t, "", "health", "--http", addr); code != 1 || !strings.Contains(errOut, "not ready: no metadata leader") {
		t.Fatalf("not ready: exit %d %s", code, errOut)
	}
	if code, answer, e := asJSON(); code != 1 || answer.Ready || answer.Reason != "no metadata leader" || answer.Status != 503 || e.Code != "NOT_READY" {
		t.Fatalf("not ready, -o json: exit %d %+v %+v", code, answer, e)
	}
	if code, out, _ := runCLI(t, "", "health", "--http", addr, "--live"); code != 0 || out != "ok\n" {
		t.Fatalf("--live: exit %d %q", code, out)
	}
	srv.Close()
	if code, _, errOut := runCLI(t, "", "health", "--http", addr); code != 1 || !strings.Contains(errOut, "/readyz") {
		t.Fatalf("nothing listening: exit %d %s", code, errOut)
	}
}

// TestTableElectNothingToDo: an election with every bucket led by its
// first live in-sync replica already is what the operator asked for: exit
// 0 and "nothing to do", not an "already exists" failure.
func TestTableElectNothingToDo(t *testing.T) {
	fc := startCluster(t)
	table := fc.createTable("e", "id BIGINT NOT NULL", 2, 2)
	for b := range int32(2) {
		if _, err := fc.WaitLeader(t.Context(), fc.db, "e", b, func(l uint32) bool { return l != 0 }); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "elect", table}, "nothing to do: every bucket of " + table + " is already led by its first live in-sync replica\n"},
		{[]string{"table", "elect", table, "--bucket", "1"}, "nothing to do: table " + table + " bucket 1 is already led by node "},
		{[]string{"table", "elect", table, "-o", "json"}, "[]\n"},
	} {
		code, out, errOut := runCLI(t, "", append(tc.args, "--server", fc.server)...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, tc.want) {
			t.Fatalf("floe %s: exit %d, %q %q; want exit 0 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}
