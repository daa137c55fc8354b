package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestCLIReferenceUpToDate fails when a command or flag changed and
// docs/cli.md was not regenerated.
func TestCLIReferenceUpToDate(t *testing.T) {
	want, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	got := cliReference(newRootCmd(&cliEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, stdin: strings.NewReader("")}))
	if !bytes.Equal(got, want) {
		t.Fatal("docs/cli.md is not what the command definitions give: run `go generate ./cmd/floe`")
	}
}

// TestCLIReferenceListsEveryCommand checks the page names every visible
// command with its own heading and leaves the hidden generator out.
func TestCLIReferenceListsEveryCommand(t *testing.T) {
	doc := string(cliReference(newRootCmd(&cliEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, stdin: strings.NewReader("")})))
	for _, h := range []string{"## floe serve\n", "## floe table create\n", "## floe db list\n", "| `--if-not-exists` |"} {
		if !strings.Contains(doc, h) {
			t.Errorf("reference lacks %q", h)
		}
	}
	if strings.Contains(doc, "gen-cli-doc") {
		t.Error("the hidden generator is listed")
	}
}
