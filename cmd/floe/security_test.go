package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/floedb/floe/transport/tlsconf"
)

// TestCertCommands makes a CA, node and user certificates and a gossip
// key, and checks what they are: the files load, a node certificate names
// its node, nothing is overwritten.
func TestCertCommands(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"cert", "ca", "--dir", dir},
		{"cert", "node", "--dir", dir, "--id", "2", "--host", "127.0.0.1,db2.example"},
		{"cert", "user", "--dir", dir, "--name", "alice"},
		{"cert", "gossip-key", "--out", filepath.Join(dir, "gossip.key")},
	} {
		if code, _, errOut := runCLI(t, "", args...); code != 0 {
			t.Fatalf("floe %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	src, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(dir, "node2.crt"), Key: filepath.Join(dir, "node2.key"),
		CA: filepath.Join(dir, "ca.crt")}, nil)
	if err != nil || src.Identity().String() != "node:2" {
		t.Fatalf("node 2's certificate: %v, identity %v", err, src)
	}
	src, err = tlsconf.Load(tlsconf.Files{Cert: filepath.Join(dir, "user-alice.crt"), Key: filepath.Join(dir, "user-alice.key"),
		CA: filepath.Join(dir, "ca.crt")}, nil)
	if err != nil || src.Identity().String() != "user:alice" {
		t.Fatalf("alice's certificate: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key: %v, mode %v; want 0600", err, fi.Mode())
	}
	code, _, errOut := runCLI(t, "", "cert", "ca", "--dir", dir)
	if code != 1 || !strings.Contains(errOut, "exists") {
		t.Fatalf("a second CA over the first: exit %d, %q; want refused", code, errOut)
	}
	for _, args := range [][]string{
		{"cert", "node", "--dir", dir},
		{"cert", "user", "--dir", dir, "--name", "bad name"},
		{"cert", "ca"},
	} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("floe %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
	if code, _, errOut := runCLI(t, "", "cert", "node", "--dir", t.TempDir(), "--id", "1"); code != 1 || !strings.Contains(errOut, "no CA") {
		t.Errorf("a node certificate without a CA: exit %d, %q", code, errOut)
	}
}

func TestACLFlags(t *testing.T) {
	for _, tc := range []struct {
		f    aclFlags
		want string // in the error; "" for success
		n    int
	}{
		{aclFlags{principal: "user:a", operations: "read,write", table: "db.t", host: "*"}, "", 2},
		{aclFlags{principal: "user:a", operations: "all", cluster: true, host: "*"}, "", 1},
		{aclFlags{operations: "read", table: "db.t"}, "--principal is required", 0},
		{aclFlags{principal: "user:a", operations: "read"}, "give one of --cluster, --database or --table", 0},
		{aclFlags{principal: "user:a", operations: "read", cluster: true, table: "db.t"}, "give one of", 0},
		{aclFlags{principal: "user:a", cluster: true}, "--operation is required", 0},
		{aclFlags{principal: "user:a", operations: "read", cluster: true, prefix: true}, "--prefix goes with", 0},
	} {
		entries, err := tc.f.entries()
		if tc.want == "" {
			if err != nil || len(entries) != tc.n {
				t.Errorf("%+v: %d entries, %v", tc.f, len(entries), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
}

// TestNoSecretOnTheCommandLine: the S3 secret key is refused on the
// command line, a file gives it, and the profiler's cmdline redacts
// secret flags' values.
func TestNoSecretOnTheCommandLine(t *testing.T) {
	code, _, errOut := runCLI(t, "", "serve", "--id", "1", "--data-dir", t.TempDir(), "--s3-endpoint", "127.0.0.1:1",
		"--s3-bucket", "b", "--s3-secret-key", "hunter2")
	if code != 2 || !strings.Contains(errOut, "--s3-secret-key-file") || strings.Contains(errOut, "hunter2") {
		t.Fatalf("--s3-secret-key: exit %d, %q; want a usage error pointing at the file, not repeating the secret", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := readSecretFile(file, "--s3-secret-key-file"); err != nil || s != "hunter2" {
		t.Fatalf("secret file: %q, %v", s, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	if _, err := readSecretFile(empty, "--s3-secret-key-file"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty secret file: %v", err)
	}
}

func TestPasswordSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("from-file\nsecond line\n"), 0o600)
	t.Setenv(passwordEnv, "")
	if p, err := password(file, "x"); err != nil || p != "from-file" {
		t.Fatalf("from a file: %q, %v", p, err)
	}
	t.Setenv(passwordEnv, "from-env")
	if p, err := password(file, "x"); err != nil || p != "from-env" {
		t.Fatalf("FLOE_PASSWORD first: %q, %v", p, err)
	}
}

func TestSecurityFlagCombinations(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--authorization"}, "--authorization needs TLS"},
		{[]string{"--tls-client-auth", "require"}, "--tls-client-auth needs TLS"},
		{[]string{"--tls-client-auth", "sometimes"}, "--tls-client-auth"},
		{[]string{"--tls-cert", "x.crt"}, "--tls-cert and --tls-key go together"},
		{[]string{"--super-users", "alice"}, "--super-users"},
	} {
		args := append([]string{"serve", "--id", "1", "--data-dir", dir}, tc.args...)
		code, _, errOut := runCLI(t, "", args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("floe %s: exit %d, %q; want %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestClientCommandsListTheSecurityFlags(t *testing.T) {
	names := clientFlagNames()
	for _, f := range []string{"tls-ca", "tls-cert", "tls-key", "user", "password-file"} {
		if !slices.Contains(names, f) {
			t.Errorf("client flags lack --%s", f)
		}
	}
}
