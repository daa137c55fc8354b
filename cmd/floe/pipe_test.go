package main

import (
	"slices"
	"strings"
	"testing"
)

// TestChangelogPipe (issue 30): a primary-key table's changelog piped from
// consume into produce, with or without --no-meta, does what it did in the
// source table: a deleted row stays deleted (before, --no-meta dropped
// _change and produce upserted the -D line's row, bringing the row back),
// and an update's -U/+U pair writes the new row once (the -U line is passed
// over), so the copy's changelog is the source's.
func TestChangelogPipe(t *testing.T) {
	fc := kvTables(t)
	src := fc.db + ".kv"
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{`{"id":1,"name":"a","score":1}` + "\n" + `{"id":2,"name":"b"}` + "\n" + `{"id":3,"name":"c"}` + "\n", nil},
		{`{"id":1,"name":"a2","score":2}` + "\n", nil},
		{`{"id":2}` + "\n", []string{"--delete"}},
	} {
		if code, _, errOut := runCLI(t, step.stdin, append([]string{"produce", src, "--server", fc.server}, step.args...)...); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	changelog := func(table string) []string {
		t.Helper()
		code, out, errOut := runCLI(t, "", "consume", table, "--no-meta", "--server", fc.server)
		if code != 0 {
			t.Fatalf("consume --no-meta %s: exit %d: %s", table, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		slices.Sort(lines)
		return lines
	}
	want := changelog(src)
	for _, tc := range []struct{ name, copy string }{
		{"no-meta", "copy1"},
		{"meta", "copy2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := fc.createTable(tc.copy, "id BIGINT NOT NULL, name STRING NOT NULL, score INT, PRIMARY KEY (id)", 2, 1)
			args := []string{"consume", src, "--server", fc.server}
			if tc.name == "no-meta" {
				args = append(args, "--no-meta")
			}
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("consume: exit %d: %s", code, errOut)
			}
			code, _, errOut = runCLI(t, out, "produce", dst, "--server", fc.server)
			if code != 0 || !strings.Contains(errOut, "upserted 4 rows, deleted 1 row, passed over 1 -U row,") {
				t.Fatalf("produce of consume's changelog: exit %d: %s", code, errOut)
			}
			if code, out, _ := runCLI(t, "", "lookup", dst, "--key", `{"id":2}`, "--server", fc.server); code != 1 {
				t.Fatalf("the deleted row came back in the copy: exit %d, %q", code, out)
			}
			if code, out, errOut := runCLI(t, "", "lookup", dst, "--key", `{"id":1}`, "--server", fc.server); code != 0 ||
				out != `{"id":1,"name":"a2","score":2}`+"\n" {
				t.Fatalf("updated row in the copy: exit %d, %q %s", code, out, errOut)
			}
			if got := changelog(dst); !slices.Equal(got, want) {
				t.Fatalf("the copy's changelog\n%s\nwant the source's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestProduceRefusesChangesItCannotApply: a log table takes no -D or -U
// line, and with --delete every line is a key to delete, so a line saying
// it writes its row is refused rather than deleted; the position fields
// consume adds are dropped on a log table too.
func TestProduceRefusesChangesItCannotApply(t *testing.T) {
	fc := kvTables(t)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		wantCode    int
		wantErr     string
	}{
		{"delete on a log table", `{"id":1,"name":"a","_change":"-D"}`, []string{"produce", "db.t"}, 1, "line 1: bad _change: a log table takes rows to append"},
		{"consume's log lines", `{"id":1,"name":"a","_bucket":0,"_offset":3,"_timestamp":"2026-01-02T03:04:05.000Z"}`, []string{"produce", "db.t"}, 0, "produced 1 row,"},
		{"write under --delete", `{"id":1,"name":"a","_change":"+U"}`, []string{"produce", "db.kv", "--delete"}, 1, "line 1: bad _change: --delete takes keys to delete"},
		{"delete under --delete", `{"id":1,"name":"a","_change":"-D"}`, []string{"produce", "db.kv", "--delete"}, 0, "deleted 1 row,"},
		{"unknown change", `{"id":1,"name":"a","_change":"+X"}`, []string{"produce", "db.kv"}, 1, "line 1: bad _change"},
	} {
		code, _, errOut := runCLI(t, tc.stdin+"\n", append(inDB(fc, tc.args), "--server", fc.server)...)
		if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", tc.name, code, errOut, tc.wantCode, tc.wantErr)
		}
	}
}
