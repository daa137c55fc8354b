package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command block of the README or a page under docs/: a ```sh fence.
// The comment line right above it says how it runs:
//
//	(none)                      against a fresh `floe dev` of its page, in
//	                            page order, so a block builds on the ones
//	                            before it
//	<!-- doc-test: cluster -->  starts (or, after the first, talks to) the
//	                            three-node cluster the block itself starts
//	                            on ports 7710-7731; FLOE_SERVER names it
//	<!-- doc-test: skip: WHY --> not run, for the reason given
type docBlock struct {
	line   int // of the opening fence, 1-based
	mode   string
	why    string
	script string
}

const (
	docDev     = "dev"
	docCluster = "cluster"
	docSkip    = "skip"
)

// parseDocBlocks returns the ```sh blocks of a Markdown file.
func parseDocBlocks(path string) ([]docBlock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blocks []docBlock
	var cur *docBlock
	var body []string
	prev := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(line, "```"):
			cur.script = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur, body = nil, nil
		case cur != nil:
			body = append(body, line)
		case line == "```sh":
			b := docBlock{line: n, mode: docDev}
			if spec, ok := strings.CutPrefix(prev, "<!-- doc-test: "); ok {
				spec = strings.TrimSuffix(spec, " -->")
				mode, why, _ := strings.Cut(spec, ":")
				b.mode, b.why = mode, strings.TrimSpace(why)
				if b.mode != docCluster && b.mode != docSkip || b.mode == docSkip && b.why == "" {
					return nil, fmt.Errorf("%s:%d: doc-test annotation %q: want `cluster` or `skip: REASON`", path, n-1, spec)
				}
			}
			cur = &b
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unclosed code block", path, cur.line)
	}
	return blocks, sc.Err()
}

// docPages are the pages whose command blocks must run as written: the
// README and every page under docs/.
func docPages(t *testing.T) []string {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, pages...)
}

// TestDocCommands runs every command block of the README and docs/ as
// written, with the floe binary on PATH, and fails on the first command of
// a block that fails. Blocks that cannot run here say why (see docBlock).
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts floe dev and a three-node cluster")
	}
	runnable := 0
	for _, page := range docPages(t) {
		blocks, err := parseDocBlocks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if b.mode != docSkip {
				runnable++
			}
		}
		t.Run(filepath.Base(page), func(t *testing.T) {
			r := &docRunner{t: t, dir: t.TempDir()}
			for _, b := range blocks {
				if b.mode == docSkip {
					t.Logf("%s:%d not run: %s", page, b.line, b.why)
					continue
				}
				r.run(page, b)
			}
		})
	}
	if runnable == 0 {
		t.Fatal("no command block to run: the parser found none")
	}
}

// docRunner runs one page's blocks: its floe dev, its cluster.
type docRunner struct {
	t       *testing.T
	dir     string
	devAddr string
	cluster bool
}

func (r *docRunner) run(page string, b docBlock) {
	t := r.t
	env := append(os.Environ(), "PATH="+filepath.Dir(floeBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FLOE_OUTPUT=", "FLOE_TIMEOUT=")
	script := b.script
	switch b.mode {
	case docDev:
		env = append(env, "FLOE_SERVER="+r.startDev())
	case docCluster:
		if !r.cluster {
			for port := 7710; port <= 7731; port++ {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err != nil {
					t.Skipf("%s:%d starts a cluster on ports 7710-7731, and port %d is taken", page, b.line, port)
				}
				l.Close()
			}
			r.cluster = true
		}
		env = append(env, "FLOE_SERVER=127.0.0.1:7710,127.0.0.1:7720,127.0.0.1:7730")
		// The cluster's folders go where the test's do.
		script = strings.ReplaceAll(script, "/tmp/floe", filepath.Join(r.dir, "floe"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = r.dir, env
	// Its own process group, which the test kills when the page is done:
	// a block may leave nodes running in the background for the next.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A file, not a pipe: nodes left running keep writing to it after the
	// block's shell is gone.
	out, err := os.CreateTemp(r.dir, "block-*.out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	err = cmd.Wait()
	printed, _ := os.ReadFile(out.Name())
	if err != nil {
		t.Fatalf("%s:%d failed (%v):\n%s\noutput:\n%s", page, b.line, err, script, printed)
	}
	t.Logf("%s:%d ran:\n%s", page, b.line, printed)
}

// startDev starts the page's floe dev once and returns its address.
func (r *docRunner) startDev() string {
	if r.devAddr != "" {
		return r.devAddr
	}
	t := r.t
	c := &Cluster{t: t, dir: r.dir}
	nd := &Node{ID: 1, Addr: freeAddr(t), Gossip: freeAddr(t), DataDir: filepath.Join(r.dir, "dev"), logPath: filepath.Join(r.dir, "dev.log")}
	nd.args = []string{"dev", "--data-dir", nd.DataDir, "--listen", nd.Addr, "--gossip", nd.Gossip, "--log-level", *logLevel}
	c.Nodes = []*Node{nd}
	c.start(nd)
	t.Cleanup(c.stopAll)
	c.MustCLI("cluster", "status", "--wait", "30s")
	r.devAddr = nd.Addr
	return nd.Addr
}

// TestDocBlocksParse checks the parser on the annotations, so a typo in
// one cannot make a block silently skipped.
func TestDocBlocksParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	os.WriteFile(path, []byte("text\n\n```sh\nfloe db list\n```\n\n<!-- doc-test: skip: needs root -->\n```sh\nfloe chaos run\n```\n<!-- doc-test: cluster -->\n\n```sh\nfloe serve &\n```\n```go\nx := 1\n```\n"), 0o644)
	blocks, err := parseDocBlocks(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []docBlock{{3, docDev, "", "floe db list\n"}, {8, docSkip, "needs root", "floe chaos run\n"}, {13, docCluster, "", "floe serve &\n"}}
	if fmt.Sprint(blocks) != fmt.Sprint(want) {
		t.Fatalf("blocks %+v, want %+v", blocks, want)
	}
	os.WriteFile(path, []byte("<!-- doc-test: skipp: typo -->\n```sh\nfloe db list\n```\n"), 0o644)
	if _, err := parseDocBlocks(path); err == nil {
		t.Fatal("a misspelled annotation was accepted")
	}
	os.WriteFile(path, []byte("<!-- doc-test: skip -->\n```sh\nfloe db list\n```\n"), 0o644)
	if _, err := parseDocBlocks(path); err == nil {
		t.Fatal("a skip without a reason was accepted")
	}
}

// TestSecureRecipeIsTheTestedOne: the README's secure cluster is the
// recipe of docs/security.md, which TestDocCommands runs (one page may
// start one cluster on the doc ports).
func TestSecureRecipeIsTheTestedOne(t *testing.T) {
	first := func(page string) string {
		blocks, err := parseDocBlocks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if strings.Contains(b.script, "floe cert ca") {
				return b.script
			}
		}
		t.Fatalf("%s has no secure cluster recipe", page)
		return ""
	}
	if readme, doc := first("../README.md"), first("../docs/security.md"); readme != doc {
		t.Fatalf("the README's secure recipe differs from docs/security.md's:\n%s\n----\n%s", readme, doc)
	}
}
