package main

import (
	"strings"
	"testing"
)

// TestTableAlter: floe table alter prints each change, describe shows the
// result, a repeat says the table is unchanged, and refusals name their
// rule without changing anything.
func TestTableAlter(t *testing.T) {
	fc := startCluster(t)
	table := fc.createTable("alt", "id BIGINT NOT NULL, name STRING", 1, 1)
	fc.mustRun(`{"id":1,"name":"a"}`+"\n", "produce", table)

	out, _ := fc.mustRun("", "table", "alter", table, "--set", "log.ttl=3d", "--set", "log.format=row",
		"--add-column", "note STRING", "--comment", "web events")
	for _, want := range []string{
		"property log.format: default -> row",
		"property log.ttl: default -> 3d",
		"column note STRING added (schema version 2)",
		`comment: "" -> "web events"`,
		"altered table " + table,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("alter output lacks %q:\n%s", want, out)
		}
	}
	out, _ = fc.mustRun("", "table", "describe", table)
	for _, want := range []string{"web events", "note", "log.ttl=3d"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if out, _ := fc.mustRun("", "table", "alter", table, "--set", "log.ttl=3d"); !strings.Contains(out, "unchanged") {
		t.Errorf("a repeated alter: %s", out)
	}
	out, _ = fc.mustRun("", "table", "alter", table, "--reset", "log.ttl")
	if !strings.Contains(out, "property log.ttl: 3d -> default") {
		t.Errorf("reset: %s", out)
	}
	fc.mustRun(`{"id":2,"name":"b","note":"n"}`+"\n", "produce", table)
	if out, _ := fc.mustRun("", "consume", table, "--no-meta"); out != `{"id":1,"name":"a","note":null}`+"\n"+`{"id":2,"name":"b","note":"n"}`+"\n" {
		t.Errorf("rows across the alter:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "merge-engine=first_row"}, "merge-engine"},
		{[]string{"--add-column", "must INT NOT NULL"}, "NOT NULL"},
		{[]string{"--set", "no.such.property=1"}, "no.such.property"},
		{[]string{"--set", "buckets=8"}, "buckets"},
		{[]string{"--add-column", "note STRING"}, "note"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"table", "alter", table, "--server", fc.server}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("alter %v: exit %d, stderr %q; want a refusal naming %s", tc.args, code, errOut, tc.want)
		}
		t.Logf("alter %v: %s", tc.args, strings.TrimSpace(errOut))
	}
	if out, _ := fc.mustRun("", "table", "describe", table); strings.Contains(out, "must") {
		t.Errorf("a refused alter changed the table:\n%s", out)
	}
}
