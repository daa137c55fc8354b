package integration

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/floedb/floe"

// forbidden maps a package prefix (relative to the module) to the module
// packages it must not import: storage ← tiering ← server ← cmd, raftmeta
// storage-free, and transport/client free of business logic.
var forbidden = map[string][]string{
	"storage/record":   {"storage/logstore", "storage/kvstore", "tiering", "server", "raftmeta", "transport", "client", "cmd"},
	"storage/logstore": {"storage/kvstore", "tiering", "server", "raftmeta", "transport", "client", "cmd"},
	"storage/kvstore":  {"storage/logstore", "tiering", "server", "raftmeta", "transport", "client", "cmd"},
	"tiering":          {"server", "raftmeta", "client", "cmd"},
	"raftmeta":         {"storage", "tiering", "server", "client", "cmd"},
	"transport":        {"storage/logstore", "storage/kvstore", "tiering", "server", "raftmeta", "client", "cmd"},
	"client":           {"storage/logstore", "storage/kvstore", "tiering", "server", "raftmeta", "cmd"},
	"server":           {"cmd", "client"},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for prefix, banned := range forbidden {
			if rel != prefix && !strings.HasPrefix(rel, prefix+"/") {
				continue
			}
			for _, imp := range p.Imports {
				irel, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				for _, b := range banned {
					if (irel == b || strings.HasPrefix(irel, b+"/")) && !strings.HasPrefix(irel, prefix) {
						t.Errorf("%s imports %s: %s must not depend on %s", rel, irel, prefix, b)
					}
				}
			}
		}
	}
}

// TestNoTestingInProduction: production packages never import testing.
func TestNoTestingInProduction(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if imp == "testing" || strings.HasPrefix(imp, "testing/") {
				t.Errorf("%s imports %s outside its tests", p.ImportPath, imp)
			}
		}
	}
}
