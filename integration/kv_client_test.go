package integration

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"pgregory.net/rapid"
)

// kvClientSchema has a two-column primary key whose first column is the
// bucket key, so prefix lookups work.
const kvClientSchema = "a BIGINT NOT NULL, b STRING NOT NULL, name STRING, v BIGINT"

func openKV(t *testing.T, ctx context.Context, cl *client.Client, db, name, schema string, pk, bk []string, buckets int32) *client.Table {
	t.Helper()
	if err := cl.Admin().CreateDatabase(ctx, db, client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: name, Schema: schema,
		PrimaryKey: pk, BucketKey: bk, Buckets: buckets, Replication: 3}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func mustFuture(t *testing.T, ctx context.Context, f *client.UpsertFuture, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestKVClient drives a primary-key table through the Go SDK and the CLI on
// a real cluster: upserts, partial updates and deletes from writers,
// point, batch and prefix lookups, the changelog through a LogScanner and
// `floe consume`, and `floe produce` / `floe lookup`.
func TestKVClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	tbl := openKV(t, ctx, cl, "sdk", "kv", kvClientSchema, []string{"a", "b"}, []string{"a"}, 3)

	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for a := range 4 {
		for _, b := range []string{"x", "y", "z"} {
			f, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":%q,"name":"n%d%s","v":%d}`, a, b, a, b, a*10))
			mustFuture(t, ctx, f, err)
		}
	}
	partial, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{PartialColumns: []string{"v"}})
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close(ctx)
	f, err := partial.UpsertJSON(ctx, []byte(`{"a":1,"b":"x","v":99}`))
	mustFuture(t, ctx, f, err)
	f, err = w.DeleteJSON(ctx, []byte(`{"a":2,"b":"y"}`))
	mustFuture(t, ctx, f, err)

	for _, linearizable := range []bool{false, true} {
		l, err := tbl.NewLookuper(client.LookuperOptions{Linearizable: linearizable})
		if err != nil {
			t.Fatal(err)
		}
		row, found, err := l.LookupJSON(ctx, []byte(`{"a":1,"b":"x"}`))
		if err != nil || !found || rowJSONOf(t, tbl, row) != `{"a":1,"b":"x","name":"n1x","v":99}` {
			t.Fatalf("lookup (linearizable %v) of 1/x: %s %v %v", linearizable, rowJSONOf(t, tbl, row), found, err)
		}
		if _, found, err := l.LookupJSON(ctx, []byte(`{"a":2,"b":"y"}`)); err != nil || found {
			t.Fatalf("deleted key found: %v %v", found, err)
		}
		rows, err := l.PrefixLookupJSON(ctx, []byte(`{"a":2}`))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, rowJSONOf(t, tbl, r))
		}
		if want := []string{`{"a":2,"b":"x","name":"n2x","v":20}`, `{"a":2,"b":"z","name":"n2z","v":20}`}; !slices.Equal(got, want) {
			t.Fatalf("prefix lookup of a=2: %v, want %v", got, want)
		}
		l.Close()
	}

	// The CLI: upserts, a partial update and a delete; lookups; the
	// changelog with _change.
	if out, errOut, code := c.CLIInput(`{"a":7,"b":"q","name":"cli","v":1}`+"\n"+`{"a":7,"b":"r","name":"cli2","v":2}`+"\n", "produce", "sdk.kv"); code != 0 {
		t.Fatalf("produce: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := c.CLIInput(`{"a":7,"b":"q","name":"renamed"}`+"\n", "produce", "sdk.kv", "--columns", "name"); code != 0 {
		t.Fatalf("produce --columns: %d %s", code, errOut)
	}
	if _, errOut, code := c.CLIInput(`{"a":7,"b":"r"}`+"\n", "produce", "sdk.kv", "--delete"); code != 0 {
		t.Fatalf("produce --delete: %d %s", code, errOut)
	}
	out, errOut, code := c.CLI("lookup", "sdk.kv", "--key", `{"a":7,"b":"q"}`, "--linearizable")
	if code != 0 || strings.TrimSpace(out) != `{"a":7,"b":"q","name":"renamed","v":1}` {
		t.Fatalf("lookup 7/q: %d %q %s", code, out, errOut)
	}
	if out, _, code := c.CLI("lookup", "sdk.kv", "--key", `{"a":7,"b":"r"}`); code != 1 || out != "" {
		t.Fatalf("lookup of a deleted key: exit %d, %q; want 1 and nothing", code, out)
	}
	if _, errOut, code := c.CLI("lookup", "sdk.kv", "--key", `{"a":"seven"}`); code == 0 || errOut == "" {
		t.Fatalf("lookup with a bad key: exit %d %q", code, errOut)
	}
	if _, errOut, code := c.CLI("lookup", "sdk.nope", "--key", `{"a":1}`); code == 0 || !strings.Contains(errOut, "nope") {
		t.Fatalf("lookup in an unknown table: exit %d %q", code, errOut)
	}
	out, errOut, code = c.CLI("consume", "sdk.kv", "--buckets", fmt.Sprint(bucketOfA(t, tbl, 7)))
	if code != 0 {
		t.Fatalf("consume: %d %s", code, errOut)
	}
	var changes []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, `"a":7`) {
			changes = append(changes, line)
		}
	}
	want := []string{`"_change":"+I"`, `"_change":"+I"`, `"_change":"-U"`, `"_change":"+U"`, `"_change":"-D"`}
	if len(changes) != len(want) {
		t.Fatalf("changelog of a=7:\n%s", strings.Join(changes, "\n"))
	}
	for i, ch := range changes {
		if !strings.Contains(ch, want[i]) {
			t.Fatalf("changelog of a=7, record %d: %s, want %s", i, ch, want[i])
		}
	}
}

func rowJSONOf(t testing.TB, tbl *client.Table, row []byte) string {
	t.Helper()
	if row == nil {
		return ""
	}
	js, err := tbl.JSONCodec().AppendJSON(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func bucketOfA(t testing.TB, tbl *client.Table, a int64) int32 {
	t.Helper()
	enc := tbl.NewRowEncoder()
	enc.SetInt64(0, a)
	enc.SetString(1, "")
	row, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tbl.BucketOf(row)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kvState is the model of a table with kvClientSchema under last-row merge:
// key → row JSON.
type kvState map[string]string

// TestKVChangelogReplay runs random upserts, partial updates and deletes
// (rapid) against a real cluster, then checks that the changelog read from
// offset 0 replays to exactly the table the lookups show, and that both
// equal the model.
func TestKVChangelogReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	// Each case writes to the cluster: 25 cases unless -rapid.checks says.
	setByUser := false
	flag.Visit(func(f *flag.Flag) { setByUser = setByUser || f.Name == "rapid.checks" })
	if f := flag.Lookup("rapid.checks"); f != nil && !setByUser {
		old := f.Value.String()
		f.Value.Set("25")
		defer f.Value.Set(old)
	}
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		tbl := openKV(t, ctx, cl, "replay", fmt.Sprintf("t%d", round), kvClientSchema, []string{"a", "b"}, nil, 2)
		full, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{Linger: time.Millisecond})
		if err != nil {
			rt.Fatal(err)
		}
		defer full.Close(ctx)
		partial, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{PartialColumns: []string{"v"}, Linger: time.Millisecond})
		if err != nil {
			rt.Fatal(err)
		}
		defer partial.Close(ctx)
		model := map[[2]string]map[string]any{}
		ops := rapid.IntRange(1, 60).Draw(rt, "ops")
		for i := range ops {
			a := rapid.IntRange(0, 5).Draw(rt, "a")
			b := rapid.SampledFrom([]string{"p", "q"}).Draw(rt, "b")
			k := [2]string{fmt.Sprint(a), b}
			var f *client.UpsertFuture
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				f, err = full.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":%q,"name":"r%d","v":%d}`, a, b, i, i))
				model[k] = map[string]any{"name": fmt.Sprintf("r%d", i), "v": i}
			case 1:
				f, err = partial.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":%q,"v":%d}`, a, b, 1000+i))
				if old, ok := model[k]; ok {
					model[k] = map[string]any{"name": old["name"], "v": 1000 + i}
				} else {
					model[k] = map[string]any{"name": nil, "v": 1000 + i}
				}
			default:
				f, err = full.DeleteJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":%q}`, a, b))
				delete(model, k)
			}
			if err != nil {
				rt.Fatal(err)
			}
			// Writers are independent: wait for each write so their order is the model's.
			if _, err := f.Wait(ctx); err != nil {
				rt.Fatal(err)
			}
		}
		want := map[string]string{}
		for k, v := range model {
			name := "null"
			if v["name"] != nil {
				name = fmt.Sprintf("%q", v["name"])
			}
			want[k[0]+"/"+k[1]] = fmt.Sprintf(`{"a":%s,"b":%q,"name":%s,"v":%d}`, k[0], k[1], name, v["v"])
		}
		// Lookups.
		l, err := tbl.NewLookuper(client.LookuperOptions{Linearizable: true})
		if err != nil {
			rt.Fatal(err)
		}
		defer l.Close()
		for a := range 6 {
			for _, b := range []string{"p", "q"} {
				row, found, err := l.LookupJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":%q}`, a, b))
				if err != nil {
					rt.Fatal(err)
				}
				k := fmt.Sprintf("%d/%s", a, b)
				if got := rowJSONOf(t, tbl, row); got != want[k] || found != (want[k] != "") {
					rt.Fatalf("lookup %s: %q, model %q", k, got, want[k])
				}
			}
		}
		// Changelog replay.
		replayed := map[string]string{}
		sc, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 50 * time.Millisecond})
		if err != nil {
			rt.Fatal(err)
		}
		defer sc.Close()
		ends, err := cl.Admin().ListOffsets(ctx, "replay", fmt.Sprintf("t%d", round), client.Latest())
		if err != nil {
			rt.Fatal(err)
		}
		for b := range int32(2) {
			if err := sc.Subscribe(b, client.Earliest()); err != nil {
				rt.Fatal(err)
			}
		}
		pos := func() bool {
			for b := range int32(2) {
				if p, ok := sc.Position(b); !ok || p < ends[b] {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(30 * time.Second)
		for !pos() {
			if time.Now().After(deadline) {
				rt.Fatal("changelog not read to the end within 30 s")
			}
			recs, err := sc.Poll(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			for _, r := range recs {
				js := rowJSONOf(t, tbl, r.Row)
				v := record.NewRowView(tbl.Schema(), r.Row)
				k := fmt.Sprintf("%d/%s", v.Int64(0), v.String(1))
				switch r.Change {
				case record.Insert, record.UpdateAfter:
					replayed[k] = js
				case record.Delete:
					delete(replayed, k)
				}
			}
		}
		if len(replayed) != len(want) {
			rt.Fatalf("changelog replays to %d keys, model has %d: %v vs %v", len(replayed), len(want), replayed, want)
		}
		for k, v := range want {
			if replayed[k] != v {
				rt.Fatalf("changelog replay of %s: %q, model %q", k, replayed[k], v)
			}
		}
	})
}
