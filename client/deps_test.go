package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/floedb/floe"

// serverOnly are the modules only nodes need: a program that imports the
// SDK must not compile them (docs/architecture.md, The SDK's dependencies).
var serverOnly = []string{
	"github.com/hashicorp/raft",
	"github.com/dgraph-io/badger",
	"go.etcd.io/bbolt",
	"github.com/hashicorp/memberlist",
}

// TestSDKDependencies: the SDK's dependency set is a client's. Neither it
// nor anything it imports pulls in Raft, Badger, bbolt or memberlist.
func TestSDKDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, banned := range serverOnly {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("the SDK imports %s, a node's dependency", dep)
			}
		}
	}
}

// TestSDKBuildsAsADependency: a fresh module that requires Floe, as `go
// get github.com/floedb/floe/client` makes one, builds the README's SDK
// program, and resolves the whole node (cmd/floe, as `go install` would),
// with no replace of its own for Floe's dependencies. Go ignores a
// dependency's replace lines, so Floe's go.mod must need none. The replace
// below points Floe at this checkout, as `go get` would fetch it.
//
// It runs offline from the module cache; when that lacks a module and the
// proxy cannot be reached either, it skips.
func TestSDKBuildsAsADependency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	programs := sdkPrograms(t, filepath.Join(root, "README.md"), filepath.Join(root, "docs", "sdk.md"))
	if len(programs) == 0 {
		t.Fatal("no ```go block starting with `package main` in README.md or docs/sdk.md")
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for i, program := range programs {
		dir := t.TempDir()
		goMod := "module example.com/sdkuser\n\ngo 1.26.0\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n"
		for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(program)} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{
			{"mod", "tidy"},
			{"build", "-o", filepath.Join(dir, "sdkuser"), "."},
			{"list", "-deps", module + "/cmd/floe"},
		} {
			if out, err := goIn(t, dir, args...); err != nil {
				t.Fatalf("program %d: go %s in a fresh module: %v\n%s\nmain.go:\n%s", i+1, strings.Join(args, " "), err, out, program)
			}
		}
	}
}

// goIn runs the go command in dir offline, from the module cache; if the
// cache lacks a module, it tries again through the proxy, and skips the
// test when the proxy cannot be reached.
func goIn(t *testing.T, dir string, args ...string) ([]byte, error) {
	t.Helper()
	run := func(offline bool) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		if offline {
			// The cache's modules were verified when they were downloaded.
			cmd.Env = append(cmd.Env, "GOPROXY=off", "GOSUMDB=off")
		}
		return cmd.CombinedOutput()
	}
	out, err := run(true)
	if err == nil || !strings.Contains(string(out), "GOPROXY=off") {
		return out, err
	}
	out, err = run(false)
	if err != nil && unreachable.Match(out) {
		t.Skipf("go %s needs a module the cache lacks, and the proxy is unreachable:\n%s", strings.Join(args, " "), out)
	}
	return out, err
}

// unreachable matches the go command's complaints of a network it cannot use.
var unreachable = regexp.MustCompile(`dial tcp|no such host|i/o timeout|connection refused|network is unreachable|TLS handshake timeout`)

// sdkPrograms returns the complete programs (```go blocks starting with
// `package main`) of the given Markdown files; a missing file has none.
func sdkPrograms(t *testing.T, paths ...string) []string {
	t.Helper()
	var programs []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range strings.Split(string(data), "```go\n")[1:] {
			code, _, _ := strings.Cut(block, "```")
			if strings.HasPrefix(code, "package main\n") {
				programs = append(programs, code)
			}
		}
	}
	return programs
}
