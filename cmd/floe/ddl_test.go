package main

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestDDLIfNotExistsAndIfExists: --if-not-exists on an existing database or
// table and --if-exists on a missing one exit 0 and say what they found; a
// table that exists with another definition than the one asked for is
// warned about.
func TestDDLIfNotExistsAndIfExists(t *testing.T) {
	fc := startCluster(t)
	db := fc.db + "_ddl"
	srv := []string{"--server", fc.server}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, "", append(args, srv...)...)
	}
	const schema = "id BIGINT NOT NULL, name STRING"

	steps := []struct {
		args       []string
		wantOut    string
		wantErr    string // a substring of stderr; "" wants it empty
		wantStatus int
	}{
		{[]string{"db", "create", db}, "created database " + db + "\n", "", 0},
		{[]string{"db", "create", db, "--if-not-exists"}, "database " + db + " already exists\n", "", 0},
		{[]string{"db", "create", db}, "", "already exists", 1},
		{[]string{"table", "create", db + ".t", "--schema", schema, "--replication", "1", "--buckets", "1"},
			"created table " + db + ".t (1 bucket, replication 1)\n", "", 0},
		{[]string{"table", "create", db + ".t", "--schema", schema, "--replication", "1", "--if-not-exists"},
			"table " + db + ".t already exists\n", "", 0},
		{[]string{"table", "create", db + ".t", "--schema", "id BIGINT NOT NULL, name STRING, extra INT", "--buckets", "2", "--if-not-exists"},
			"table " + db + ".t already exists\n", "differs from the request: schema (id BIGINT NOT NULL, name STRING), requested (id BIGINT NOT NULL, name STRING, extra INT)", 0},
		{[]string{"table", "create", db + ".t", "--schema", schema, "--buckets", "2", "--if-not-exists"},
			"table " + db + ".t already exists\n", "1 bucket, requested 2", 0},
		{[]string{"table", "drop", db + ".nope", "--if-exists"}, "table " + db + ".nope does not exist\n", "", 0},
		{[]string{"table", "drop", "nodb_" + db + ".t", "--if-exists"}, "table nodb_" + db + ".t does not exist\n", "", 0},
		{[]string{"table", "drop", db + ".t"}, "dropped table " + db + ".t\n", "", 0},
		{[]string{"db", "drop", db}, "dropped database " + db + "\n", "", 0},
		{[]string{"db", "drop", db, "--if-exists"}, "database " + db + " does not exist\n", "", 0},
		{[]string{"db", "drop", db}, "", "does not exist", 1},
	}
	for _, s := range steps {
		code, out, errOut := cli(s.args...)
		if code != s.wantStatus || out != s.wantOut || (s.wantErr == "") != (errOut == "") || !strings.Contains(errOut, s.wantErr) {
			t.Fatalf("floe %s: exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout %q, stderr with %q",
				strings.Join(s.args, " "), code, out, errOut, s.wantStatus, s.wantOut, s.wantErr)
		}
	}
}

// TestTableCreateRefusesBadDefinitions: unknown properties, values out of
// range, column names that clash with consume's fields and types whose
// length Floe would not enforce are refused at create, saying what is valid.
func TestTableCreateRefusesBadDefinitions(t *testing.T) {
	fc := startCluster(t)
	if code, _, errOut := runCLI(t, "", "db", "create", fc.db, "--if-not-exists", "--server", fc.server); code != 0 {
		t.Fatal(errOut)
	}
	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"min.insync.replicas not a number", []string{"--property", "min.insync.replicas=abc"},
			[]string{`min.insync.replicas="abc"`, "from 1 to the replication factor 1", "valid properties:"}},
		{"min.insync.replicas above replication", []string{"--property", "min.insync.replicas=5"},
			[]string{`min.insync.replicas="5"`, "replication factor 1"}},
		{"typo", []string{"--primary-key", "id", "--property", "merge-engne=first_row"},
			[]string{`"merge-engne": unknown property`, "merge-engine (last_row|first_row|versioned)", "min.insync.replicas (1 to the replication factor)"}},
		{"bad merge engine", []string{"--primary-key", "id", "--property", "merge-engine=newest"},
			[]string{`merge-engine="newest"`, "want one of last_row, first_row, versioned"}},
		{"merge engine on a log table", []string{"--property", "merge-engine=first_row"},
			[]string{"merge-engine", "primary-key tables only"}},
		{"reserved column", []string{"--schema", "id BIGINT NOT NULL, _offset BIGINT"},
			[]string{`"_offset"`, "reserved for the fields consume adds (_bucket, _offset, _timestamp, _change)"}},
		{"varchar length", []string{"--schema", "id BIGINT NOT NULL, name VARCHAR(10)"},
			[]string{"VARCHAR(n) is not supported", "use STRING"}},
		{"char", []string{"--schema", "id BIGINT NOT NULL, code CHAR(2)"},
			[]string{"CHAR(n) is not supported"}},
		{"names differing in case", []string{"--schema", "id INT, ID BIGINT"},
			[]string{`column 2 "ID": same name as column 1 "id" but for case`}},
		{"unknown type", []string{"--schema", "id BIGINT NOT NULL, n NUMBER"},
			[]string{`unknown type "NUMBER"; supported types: BOOLEAN (BOOL), TINYINT`, "TIMESTAMP_LTZ(p)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"table", "create", fc.db + ".bad", "--replication", "1", "--server", fc.server}
			if !strings.Contains(strings.Join(tt.args, " "), "--schema") {
				args = append(args, "--schema", "id BIGINT NOT NULL, name STRING")
			}
			code, out, errOut := runCLI(t, "", append(args, tt.args...)...)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want a refusal", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
	if code, out, _ := runCLI(t, "", "table", "list", fc.db, "--server", fc.server); code != 0 || strings.Contains(out, "bad") {
		t.Fatalf("table list after refusals: exit %d\n%s", code, out)
	}
	// What the CLI refuses before asking, the server refuses too (SDK callers).
	c, err := client.Connect(t.Context(), fc.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Admin().CreateDatabase(t.Context(), "café"); !errors.Is(err, transport.ErrInvalidRequest) || !strings.Contains(err.Error(), "ASCII letters") {
		t.Errorf("SDK create database café: %v", err)
	}
	code, out, errOut := runCLI(t, "", "table", "create", fc.db+".good", "--replication", "1", "--primary-key", "id",
		"--schema", "id BIGINT NOT NULL, v BIGINT", "--property", "min.insync.replicas=1", "--property", "merge-engine=VERSIONED",
		"--property", "merge-engine.version-column=v", "--server", fc.server)
	if code != 0 {
		t.Fatalf("valid properties refused: exit %d %s %s", code, out, errOut)
	}
}

// TestTimestampZoneNamesLTZ: a zoned value produced into a TIMESTAMP column
// is refused with an error that points at TIMESTAMP_LTZ.
func TestTimestampZoneNamesLTZ(t *testing.T) {
	fc := startCluster(t)
	table := fc.createTable("ts", "id BIGINT NOT NULL, at TIMESTAMP", 1, 1)
	code, _, errOut := runCLI(t, `{"id":1,"at":"2024-05-01T10:00:00Z"}`+"\n", "produce", table, "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, "has a time zone") || !strings.Contains(errOut, "use TIMESTAMP_LTZ") {
		t.Fatalf("zoned value into TIMESTAMP: exit %d, stderr %q", code, errOut)
	}
}

// TestDescribeShowsUnusableTable: a table whose stored metadata nodes
// cannot use (stored before create checked it) is shown as unusable, with
// the reason.
func TestDescribeShowsUnusableTable(t *testing.T) {
	var out bytes.Buffer
	env := &cliEnv{stdout: &out}
	err := printTable(env, &client.TableInfo{Database: "db", Name: "t", Buckets: 1, Replication: 1,
		Properties: map[string]string{"min.insync.replicas": "abc"},
		Unusable:   `property min.insync.replicas="abc": want an integer from 1 to the replication factor 1`})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^status +unusable: property min.insync.replicas="abc"`).MatchString(out.String()) {
		t.Fatalf("describe:\n%s", out.String())
	}
}

// TestUnusableTableEndToEnd: tables stored by an older build that did not
// check properties (create commands of checks version 0, proposed as such a
// build would): one whose properties still have a clear meaning is served
// and describe warns about it; one with a value no node can read is shown
// by describe as unusable with the reason, and its reads and writes are
// refused saying so, never as a dropped table.
func TestUnusableTableEndToEnd(t *testing.T) {
	fc := startCluster(t)
	if code, _, errOut := runCLI(t, "", "db", "create", fc.db, "--if-not-exists", "--server", fc.server); code != 0 {
		t.Fatal(errOut)
	}
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	meta := pb.NewDRPCMetaClient(pool.Conn(fc.Addrs()[0]))
	storeUnchecked := func(name string, props map[string]string) string {
		t.Helper()
		resp, err := meta.Propose(t.Context(), &pb.ProposeRequest{Command: &pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{
			Database: fc.db, Name: name, Columns: []*pb.Column{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "STRING", Nullable: true}},
			Buckets: 1, Replication: 1, Properties: props,
		}}}})
		if err != nil || resp.GetResult().GetError() != "" {
			t.Fatalf("storing a table as an older build would: %v %v", err, resp)
		}
		return fc.db + "." + name
	}

	// Kept typos and a min.insync.replicas above the replication factor:
	// served (every replica in sync for acks=all), and describe warns.
	served := storeUnchecked("typo", map[string]string{"min.insync.replicas": "5", "retention.ms": "1000"})
	if err := fc.WaitServing(t.Context(), fc.db, "typo"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "table", "describe", served, "--server", fc.server)
	if code != 0 || strings.Contains(out, "unusable") || !strings.Contains(out, "warning") || !strings.Contains(out, "table create refuses it now") {
		t.Fatalf("describe of a served table with unchecked properties: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, `{"id":1,"name":"a"}`+"\n", "produce", served, "--server", fc.server); code != 0 {
		t.Fatalf("acks=all produce to a table with min.insync.replicas=5 of 1: exit %d %s", code, errOut)
	}

	table := storeUnchecked("old", map[string]string{"min.insync.replicas": "abc"})

	code, out, errOut = runCLI(t, "", "table", "describe", table, "--server", fc.server)
	if code != 0 || !strings.Contains(out, `unusable: property min.insync.replicas="abc"`) {
		t.Fatalf("describe: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"produce", table, "--acks", "1"},
		{"consume", table},
	} {
		// The tablet may not have seen the table yet (a retriable answer
		// the client waits out); it then answers with the reason.
		code, _, errOut := runCLI(t, `{"id":1,"name":"a"}`+"\n", append(args, "--server", fc.server, "--timeout", "10s")...)
		if code != 1 || !strings.Contains(errOut, "unusable") || !strings.Contains(errOut, "min.insync.replicas") ||
			strings.Contains(errOut, "dropped") {
			t.Fatalf("floe %s: exit %d, stderr %q; want a refusal naming the table unusable", args[0], code, errOut)
		}
	}
}

// TestNestedColumnsEndToEnd: a table with ARRAY, MAP and ROW columns is
// created through the CLI, describe shows their types in the canonical
// form, and a row produced as JSON is consumed back with the same values;
// a nested column in the primary key is refused at create.
func TestNestedColumnsEndToEnd(t *testing.T) {
	fc := startCluster(t)
	fc.mustRun("", "db", "create", fc.db, "--if-not-exists")
	table := fc.db + ".nested"
	fc.mustRun("", "table", "create", table, "--replication", "1", "--buckets", "1", "--schema",
		"id BIGINT NOT NULL, tags array<string not null>, attrs MAP<STRING,BIGINT>, addr ROW<street STRING, zip INT NOT NULL>")
	out, _ := fc.mustRun("", "table", "describe", table)
	for _, want := range []string{"ARRAY<STRING NOT NULL>", "MAP<STRING, BIGINT>", "ROW<street STRING, zip INT NOT NULL>"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %s:\n%s", want, out)
		}
	}
	const row = `{"id":1,"tags":["a","b"],"attrs":{"x":1,"y":null},"addr":{"street":"Main","zip":12345}}`
	fc.mustRun(row+"\n", "produce", table)
	out, _ = fc.mustRun("", "consume", table, "--limit", "1")
	if !strings.HasPrefix(out, strings.TrimSuffix(row, "}")+",") {
		t.Errorf("consume: %s\nwant the row %s", out, row)
	}
	code, _, errOut := runCLI(t, "", "table", "create", fc.db+".badkey", "--schema",
		"tags ARRAY<STRING> NOT NULL PRIMARY KEY", "--server", fc.server)
	if code != 1 || !strings.Contains(errOut, `column 1 "tags": ARRAY<STRING> cannot be part of the primary key`) {
		t.Errorf("nested primary key: exit %d, stderr %q", code, errOut)
	}
}

// TestNestedColumnsPrimaryKeyTable: nested values of a primary-key table
// come back whole from lookups and in its changelog, through upserts and
// partial updates.
func TestNestedColumnsPrimaryKeyTable(t *testing.T) {
	fc := startCluster(t)
	fc.mustRun("", "db", "create", fc.db, "--if-not-exists")
	table := fc.db + ".profiles"
	fc.mustRun("", "table", "create", table, "--replication", "1", "--buckets", "2", "--primary-key", "id", "--schema",
		"id BIGINT NOT NULL, tags ARRAY<STRING>, scores MAP<STRING, INT>, addr ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>")
	fc.mustRun(`{"id":1,"tags":["a",null],"scores":{"x":1},"addr":{"city":"Oslo","geo":{"lat":59.9,"lon":10.7}}}`+"\n", "produce", table)
	fc.mustRun(`{"id":1,"tags":[],"scores":{"x":2,"y":3}}`+"\n", "produce", table, "--columns", "tags,scores")
	const want = `{"id":1,"tags":[],"scores":{"x":2,"y":3},"addr":{"city":"Oslo","geo":{"lat":59.9,"lon":10.7}}}` + "\n"
	if out, _ := fc.mustRun("", "lookup", table, "--key", `{"id":1}`); out != want {
		t.Errorf("lookup after a partial update:\n%s\nwant\n%s", out, want)
	}
	out, _ := fc.mustRun("", "consume", table, "--no-meta")
	for _, line := range []string{
		`{"id":1,"tags":["a",null],"scores":{"x":1},"addr":{"city":"Oslo","geo":{"lat":59.9,"lon":10.7}},"_change":"+I"}`,
		`{"id":1,"tags":["a",null],"scores":{"x":1},"addr":{"city":"Oslo","geo":{"lat":59.9,"lon":10.7}},"_change":"-U"}`,
		strings.TrimSuffix(want, "}\n") + `,"_change":"+U"}`,
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("changelog lacks %s:\n%s", line, out)
		}
	}
}
