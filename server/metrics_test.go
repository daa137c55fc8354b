package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/tiering"
)

// metricsRows is how many rows the test appends: about 200 KiB, so its
// 64 KiB segments roll and tiering uploads the sealed ones.
const metricsRows = 2000

// TestMetrics runs a one-node cluster with tiering, writes, reads and
// upserts through the SDK, and checks what /metrics says of it, parsed with
// Prometheus' own text parser: every documented family is there, the
// counters moved for the table and the RPCs used, the Raft gauges are set,
// and every series the Grafana dashboard queries exists.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	remote, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := devConfig(t.TempDir())
	cfg.Remote, cfg.TieringInterval = remote, 50*time.Millisecond
	s, _ := startNode(t, ctx, cfg)
	c, err := client.Connect(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	useNode(t, ctx, c)

	// Tiering uploads in the background: wait for its first segment.
	var fams map[string]*dto.MetricFamily
	for {
		fams = scrape(t, "http://"+s.HTTPAddr()+"/metrics")
		if value(fams, "floe_tiering_uploaded_segments_total") > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("tiering uploaded no segment")
		case <-time.After(20 * time.Millisecond): // polling a condition
		}
	}

	t.Run("families", func(t *testing.T) {
		for _, name := range documentedFamilies(t) {
			if fams[name] == nil {
				t.Errorf("no family %s in the scrape (documented in docs/operations.md)", name)
			}
		}
		for name := range fams {
			if !strings.HasPrefix(name, "floe_") {
				t.Errorf("family %s is not named floe_*", name)
			}
		}
	})
	t.Run("values", func(t *testing.T) {
		checks := []struct {
			name   string
			labels map[string]string
			min    float64
		}{
			{"floe_table_records_in_total", map[string]string{"table": "m.events"}, metricsRows},
			{"floe_table_bytes_in_total", map[string]string{"table": "m.events"}, metricsRows * 100},
			{"floe_table_records_out_total", map[string]string{"table": "m.events"}, metricsRows},
			{"floe_table_records_in_total", map[string]string{"table": "m.users"}, 3},
			{"floe_table_records_out_total", map[string]string{"table": "m.users"}, 2},
			{"floe_rpc_requests_total", map[string]string{"rpc": "Tablet/Writes/Produce"}, 1},
			{"floe_rpc_requests_total", map[string]string{"rpc": "Tablet/Writes/PutKv"}, 1},
			{"floe_rpc_requests_total", map[string]string{"rpc": "Tablet/Fetch"}, 1},
			{"floe_rpc_requests_total", map[string]string{"rpc": "Tablet/Lookup"}, 1},
			{"floe_rpc_duration_seconds", map[string]string{"rpc": "Tablet/Lookup"}, 1}, // its count
			{"floe_rpc_errors_total", map[string]string{"rpc": "Meta/CreateDatabase", "code": "ALREADY_EXISTS"}, 1},
			{"floe_meta_applied_index", nil, 1},
			{"floe_meta_commit_index", nil, 1},
			{"floe_meta_term", nil, 1},
			{"floe_meta_leader", nil, 1},
			{"floe_bucket_leaders", map[string]string{"table": "m.events"}, 1},
			{"floe_bucket_leader_elections_total", nil, 2},
			{"floe_buckets_offline", map[string]string{"table": "m.events"}, 0},
			{"floe_kv_snapshots_total", nil, 1},
			{"floe_kv_snapshot_age_seconds", map[string]string{"table": "m.users"}, 0},
			{"floe_tiering_uploaded_bytes_total", nil, 1},
			{"floe_disk_bytes", map[string]string{"part": "logs"}, 1},
			{"floe_disk_bytes", map[string]string{"part": "kv"}, 1},
			{"floe_disk_bytes", map[string]string{"part": "meta"}, 1},
			{"floe_raft_apply", nil, 1},
			{"floe_go_goroutines", nil, 1},
		}
		for _, ch := range checks {
			got, ok := find(fams, ch.name, ch.labels)
			if !ok {
				t.Errorf("%s%v: no such series", ch.name, ch.labels)
				continue
			}
			if got < ch.min {
				t.Errorf("%s%v = %v, want at least %v", ch.name, ch.labels, got, ch.min)
			}
		}
	})
	t.Run("dashboard", func(t *testing.T) {
		for _, name := range dashboardMetrics(t) {
			if fams[familyOf(name, fams)] == nil {
				t.Errorf("the dashboard queries %s, which the node does not serve", name)
			}
		}
	})
}

// useNode writes, reads and upserts through the SDK: a log table (one
// bucket, 64 KiB segments) gets metricsRows rows, read back whole; a
// primary-key table gets three upserts, two lookups and a KV snapshot; a
// database created twice gets an ALREADY_EXISTS.
func useNode(t *testing.T, ctx context.Context, c *client.Client) {
	admin := c.Admin()
	if err := admin.CreateDatabase(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateDatabase(ctx, "m"); err == nil {
		t.Fatal("creating a database twice succeeded")
	}
	if _, err := admin.CreateTable(ctx, client.TableSpec{Database: "m", Name: "events", Schema: "id BIGINT NOT NULL, pad STRING",
		Buckets: 1, Properties: map[string]string{"log.segment.bytes": "65536", "log.format": "row"}}); err != nil { // rows: the repeated pad stays 200 KiB
		t.Fatal(err)
	}
	if _, err := admin.CreateTable(ctx, client.TableSpec{Database: "m", Name: "users", Schema: "id BIGINT NOT NULL, name STRING",
		PrimaryKey: []string{"id"}, Buckets: 1}); err != nil {
		t.Fatal(err)
	}
	events, err := c.Table(ctx, "m", "events")
	if err != nil {
		t.Fatal(err)
	}
	w, err := events.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 90)
	for i := range metricsRows {
		if _, err := w.AppendJSON(ctx, fmt.Appendf(nil, `{"id": %d, "pad": %q}`, i, pad)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sc, err := events.NewLogScanner(client.LogScannerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(0, client.Earliest()); err != nil {
		t.Fatal(err)
	}
	for read := 0; read < metricsRows; {
		recs, err := sc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read += len(recs)
	}

	users, err := c.Table(ctx, "m", "users")
	if err != nil {
		t.Fatal(err)
	}
	uw, err := users.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{`{"id": 1, "name": "ann"}`, `{"id": 2, "name": "bo"}`, `{"id": 1, "name": "cy"}`} {
		if _, err := uw.UpsertJSON(ctx, []byte(row)); err != nil {
			t.Fatal(err)
		}
	}
	if err := uw.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := users.NewLookuper(client.LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, key := range []string{`{"id": 1}`, `{"id": 2}`} {
		if _, found, err := l.LookupJSON(ctx, []byte(key)); err != nil || !found {
			t.Fatalf("lookup %s: found %v, %v", key, found, err)
		}
	}
	if _, err := users.SnapshotKV(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

// scrape GETs url and parses it as Prometheus' text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams
}

// find returns the value of the family's series that has labels (a
// histogram's: its count, a summary's: its count), summed over the series
// that match.
func find(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	sum, found := 0.0, false
	for _, m := range f.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Summary != nil:
			sum += float64(m.Summary.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum, found
}

func value(fams map[string]*dto.MetricFamily, name string) float64 {
	v, _ := find(fams, name, nil)
	return v
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
			return false
		}
	}
	return true
}

// documentedFamilies are the series names docs/operations.md's Metrics
// table lists (its first column, in backquotes).
func documentedFamilies(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(floe_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	if len(out) < 30 {
		t.Fatalf("docs/operations.md lists %d series; its Metrics table not found?", len(out))
	}
	return out
}

// dashboardMetrics are the floe_ series the Grafana dashboard's queries
// name.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "floe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("deploy/grafana/floe.json: %v", err)
	}
	seen := map[string]bool{}
	name := regexp.MustCompile(`floe_[a-zA-Z0-9_]+`)
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, n := range name.FindAllString(target.Expr, -1) {
				seen[n] = true
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("the dashboard queries %d series; its panels not read?", len(seen))
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// familyOf is the family a series name belongs to: a histogram's
// _bucket, _sum and _count series are its family's.
func familyOf(series string, fams map[string]*dto.MetricFamily) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && fams[base] != nil && fams[series] == nil {
			return base
		}
	}
	return series
}
