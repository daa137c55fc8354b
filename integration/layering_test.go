package integration

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/floedb/floe"

// forbidden maps a package prefix (relative to the module) to the module
// packages it must not import (a name ending in $ is that package alone,
// not the ones under it): storage ← tiering ← server ← cmd, raftmeta
// storage-free, transport/client free of business logic, a node's two
// roles (server/meta, server/tablet) apart from each other and from the
// node that wires them, and the engines the floe commands call
// (cmd/floe/internal/bench, dataio) libraries over the SDK and the storage
// formats, never a node's own packages.
var forbidden = map[string][]string{
	"storage/record":    {"storage/logstore", "storage/kvstore", "tiering", "server", "raftmeta", "transport", "client", "cmd"},
	"storage/logstore":  {"storage/kvstore", "tiering", "server", "raftmeta", "transport", "client", "cmd"},
	"storage/kvstore":   {"storage/logstore", "tiering", "server", "raftmeta", "transport", "client", "cmd"},
	"tiering":           {"server", "raftmeta", "client", "cmd"},
	"raftmeta":          {"storage", "tiering", "server", "client", "cmd"},
	"transport":         {"storage/logstore", "storage/kvstore", "tiering", "server", "raftmeta", "client", "cmd"},
	"client":            {"storage/logstore", "storage/kvstore", "tiering", "server", "raftmeta", "cmd"},
	"server":            {"cmd", "client"},
	"server/meta":       {"server$", "server/tablet"},
	"server/tablet":     {"server$", "server/meta"},
	"server/internal":   {"server$", "server/meta", "server/tablet"},
	"cmd/floe/internal": {"server", "raftmeta", "tiering", "storage/kvstore"},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
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
					pkg, alone := strings.CutSuffix(b, "$")
					if (irel == pkg || !alone && strings.HasPrefix(irel, pkg+"/")) && !strings.HasPrefix(irel, prefix) {
						t.Errorf("%s imports %s: %s must not depend on %s", rel, irel, prefix, b)
					}
				}
			}
		}
	}
}

// TestLogReplicaKnowsNoKV: server/replica drives the KV side of
// primary-key replicas only through its interfaces, so neither it nor
// anything it links knows the KV side (server/replica/kvreplica), the
// store (storage/kvstore) or Badger; the KV side imports the log replica,
// not the other way round. (The store's sentinel errors, in
// storage/kvstore/kverr, are the one exception: the wire-code table maps
// them.)
func TestLogReplicaKnowsNoKV(t *testing.T) {
	banned := []string{module + "/server/replica/kvreplica", module + "/storage/kvstore", "github.com/dgraph-io/badger"}
	found := false
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/server/replica" {
			continue
		}
		found = true
		for _, dep := range p.Deps {
			for _, b := range banned {
				if (dep == b || strings.HasPrefix(dep, b+"/")) && dep != module+"/storage/kvstore/kverr" {
					t.Errorf("server/replica links %s: the log replica must know the KV side only through its interfaces", dep)
				}
			}
		}
	}
	if !found {
		t.Fatal("go list did not list server/replica")
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

// TestGroundFloorImportsNothingAbove keeps the utilities under internal/
// at the bottom of the layering: every layer may use them, so they may use
// none of Floe's packages but each other. The test kits, which start real
// servers, live apart under internal/testkit.
func TestGroundFloorImportsNothingAbove(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if !strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "internal/testkit/") {
			continue
		}
		for _, imp := range p.Imports {
			irel, ok := strings.CutPrefix(imp, module+"/")
			if ok && (!strings.HasPrefix(irel, "internal/") || strings.HasPrefix(irel, "internal/testkit/")) {
				t.Errorf("%s imports %s: the utilities under internal/ may import only each other", rel, irel)
			}
		}
	}
}
