package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenLakeCatalog: --lake-catalog takes an http(s) URI, its token from
// the file or the environment; the other catalog flags without it, a
// missing token file and another scheme are usage errors, and a password
// in the URI is hidden where the node names the catalog.
func TestOpenLakeCatalog(t *testing.T) {
	if cat, err := openLakeCatalog("", "", "", "tok"); cat != nil || err != nil {
		t.Fatalf("no catalog: %v %v", cat, err)
	}
	for _, args := range [][3]string{{"", "wh", ""}, {"", "", "file"}, {"ftp://host", "", ""}} {
		if _, err := openLakeCatalog(args[0], args[1], args[2], ""); !errors.Is(err, errUsage) {
			t.Errorf("openLakeCatalog%q: %v, want a usage error", args, err)
		}
	}
	if _, err := openLakeCatalog("http://host:8181", "", filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("a missing token file taken")
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := openLakeCatalog("https://user:pw@catalog.example:8181/api/catalog", "wh", file, "")
	if err != nil {
		t.Fatal(err)
	}
	if s := cat.String(); strings.Contains(s, "pw") || !strings.Contains(s, "catalog.example:8181/api/catalog") {
		t.Fatalf("the catalog is named %q", s)
	}
}
