package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// kvTables creates primary-key tables kv and orders (bucket key a prefix
// of the primary key), and log table t, in the test's database; the CLI
// names them <db>.kv, <db>.orders and <db>.t.
func kvTables(t *testing.T) *testCluster {
	t.Helper()
	fc, _ := startLogTable(t, 2, 1)
	fc.createTable("kv", "id BIGINT NOT NULL, name STRING NOT NULL, score INT, PRIMARY KEY (id)", 3, 1)
	fc.createTable("orders", "user BIGINT NOT NULL, seq INT NOT NULL, item STRING, PRIMARY KEY (user, seq)", 2, 1, "user")
	return fc
}

// inDB puts the tables the steps name (db.x) in the test's database.
func inDB(fc *testCluster, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, "db."); ok {
			a = fc.db + "." + rest
		}
		out[i] = a
	}
	return out
}

func TestProduceUpsertAndLookup(t *testing.T) {
	fc := kvTables(t)
	steps := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"upsert", "{\"id\":1,\"name\":\"a\",\"score\":1}\n{\"id\":2,\"name\":\"b\"}\n", []string{"produce", "db.kv"}, 0, "", "upserted 2 rows"},
		{"partial", "{\"id\":1,\"score\":9}\n", []string{"produce", "db.kv", "--columns", "score"}, 0, "", "upserted 1 row,"},
		{"partial outside", "{\"id\":1,\"name\":\"x\"}\n", []string{"produce", "db.kv", "--columns", "score"}, 1, "", "line 1: column outside the partial update"},
		{"delete", "{\"id\":2}\n", []string{"produce", "db.kv", "--delete"}, 0, "", "deleted 1 row,"},
		{"lookup", "", []string{"lookup", "db.kv", "--key", `{"id":1}`}, 0, "{\"id\":1,\"name\":\"a\",\"score\":9}\n", ""},
		{"lookup linearizable", "", []string{"lookup", "db.kv", "--key", `{"id":1}`, "--linearizable"}, 0, "{\"id\":1,\"name\":\"a\",\"score\":9}\n", ""},
		{"lookup deleted", "", []string{"lookup", "db.kv", "--key", `{"id":2}`}, 1, "", "not found"},
		{"lookup stdin", "{\"id\":2}\n{\"id\":1}\n\n{\"id\":3}\n", []string{"lookup", "db.kv"}, 1, "{\"id\":1,\"name\":\"a\",\"score\":9}\n", `2 keys: not found: {"id":2}, {"id":3}`},
		{"lookup stdin all found", "{\"id\":1}\n", []string{"lookup", "db.kv"}, 0, "{\"id\":1,\"name\":\"a\",\"score\":9}\n", ""},
		// Exit 1 is an absent key alone: a key object that is not one is a
		// usage mistake.
		{"lookup bad JSON", "", []string{"lookup", "db.kv", "--key", `{"id":`}, 2, "", "invalid JSON"},
		{"lookup extra column", "", []string{"lookup", "db.kv", "--key", `{"id":1,"name":"a"}`}, 2, "", `column "name" is not a key column (the key is id)`},
		{"lookup no such column", "", []string{"lookup", "db.kv", "--key", `{"nokey":1}`}, 2, "", `column "nokey" is no column of the table (the key is id)`},
		{"lookup wrong type", "", []string{"lookup", "db.kv", "--key", `{"id":"x"}`}, 2, "", `column "id"`},
		{"lookup stdin bad line", "{\"id\":1}\n{\"id\":\"x\"}\n", []string{"lookup", "db.kv"}, 2, "{\"id\":1,\"name\":\"a\",\"score\":9}\n", "line 2:"},
		{"lookup stdin not a key column", "{\"score\":1}\n", []string{"lookup", "db.kv"}, 2, "", `line 1: column "score" is not a key column (the key is id)`},
		{"lookup unknown table", "", []string{"lookup", "db.nope", "--key", `{"id":1}`}, 1, "", ".nope"},
		{"lookup log table", "", []string{"lookup", "db.t", "--key", `{"id":1}`}, 2, "", "not a primary-key table"},
		{"key and prefix", "", []string{"lookup", "db.kv", "--key", `{"id":1}`, "--prefix", `{"id":1}`}, 2, "", "exclude"},
		{"no prefix lookup", "", []string{"lookup", "db.kv", "--prefix", `{"id":1}`}, 2, "", "strict prefix"},
		{"prefix not a bucket key column", "", []string{"lookup", "db.orders", "--prefix", `{"seq":1}`}, 2, "", `column "seq" is not a bucket key column (the bucket key is user)`},
		{"delete on a log table", "{\"id\":1}\n", []string{"produce", "db.t", "--delete"}, 2, "", "log table"},
		{"columns on a log table", "{\"id\":1}\n", []string{"produce", "db.t", "--columns", "name"}, 2, "", "log table"},
		{"orders", "{\"user\":1,\"seq\":2,\"item\":\"b\"}\n{\"user\":1,\"seq\":1,\"item\":\"a\"}\n{\"user\":2,\"seq\":1}\n", []string{"produce", "db.orders"}, 0, "", "upserted 3 rows"},
		{"prefix", "", []string{"lookup", "db.orders", "--prefix", `{"user":1}`}, 0,
			"{\"user\":1,\"seq\":1,\"item\":\"a\"}\n{\"user\":1,\"seq\":2,\"item\":\"b\"}\n", ""},
		{"prefix with no rows", "", []string{"lookup", "db.orders", "--prefix", `{"user":9}`}, 1, "", `no row with bucket key {"user":9}: not found`},
	}
	for _, st := range steps {
		code, out, errOut := runCLI(t, st.stdin, append(inDB(fc, st.args), "--server", fc.server)...)
		if code != st.wantCode || out != st.wantOut || !strings.Contains(errOut, st.wantErr) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", st.name, code, out, errOut,
				st.wantCode, st.wantOut, st.wantErr)
		}
	}
}

// TestConsumeChangelog: a primary-key table's changelog, with _change.
func TestConsumeChangelog(t *testing.T) {
	fc := kvTables(t)
	server := fc.server
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{"{\"id\":5,\"name\":\"a\"}\n", nil},
		{"{\"id\":5,\"name\":\"b\"}\n", nil},
		{"{\"id\":5}\n{\"id\":6}\n", []string{"--delete"}},
	} {
		if code, _, errOut := runCLI(t, step.stdin, append([]string{"produce", fc.db + ".kv", "--server", server}, step.args...)...); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	code, out, errOut := runCLI(t, "", "consume", fc.db+".kv", "--server", server)
	if code != 0 {
		t.Fatalf("consume: exit %d: %s", code, errOut)
	}
	var changes []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			ID     int64  `json:"id"`
			Name   string `json:"name"`
			Change string `json:"_change"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		changes = append(changes, r.Change+r.Name)
	}
	if got := strings.Join(changes, " "); got != "+Ia -Ua +Ub -Db" {
		t.Fatalf("changelog %q", got)
	}
}

// TestKVBenchSmoke runs the upsert and lookup benchmarks briefly.
func TestKVBenchSmoke(t *testing.T) {
	server := startCluster(t).server
	for _, args := range [][]string{
		{"bench", "upsert", "--duration", "100ms", "--keys", "100", "--record-bytes", "64", "--concurrency", "2"},
		{"bench", "upsert", "--duration", "100ms", "--keys", "100", "--batch", "10"},
		{"bench", "upsert", "--duration", "100ms", "--keys", "100", "--concurrency", "8", "--shared-writer", "--linger", "1ms"},
		{"bench", "lookup", "--duration", "100ms", "--keys", "50", "--record-bytes", "64", "--load", "--concurrency", "4"},
		{"bench", "lookup", "--duration", "100ms", "--keys", "200", "--batch", "16", "--linearizable"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append(args, "--server", server)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var res map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("last line is not JSON: %q", lines[len(lines)-1])
			}
			for _, k := range []string{"ops_per_s", "p50_ms", "p99_ms", "p999_ms", "errors"} {
				if _, ok := res[k]; !ok {
					t.Fatalf("result lacks %s: %s", k, lines[len(lines)-1])
				}
			}
			if res["errors"] != 0.0 || res["ops_per_s"].(float64) <= 0 {
				t.Fatalf("result %s", lines[len(lines)-1])
			}
			if args[1] == "lookup" {
				misses, ok := res["misses"].(float64)
				if !ok || (args[len(args)-1] != "--linearizable" && misses != 0) {
					t.Fatalf("misses in %s", lines[len(lines)-1])
				}
			}
		})
	}
	if code, _, _ := runCLI(t, "", "bench", "lookup", "--keys", "0", "--server", server); code != 2 {
		t.Fatalf("--keys 0: exit %d", code)
	}
}
