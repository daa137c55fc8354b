package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/floedb/floe/tiering"
)

// Catalog is an Iceberg REST catalog of one warehouse ("wh", path prefix
// "p1"), as the REST catalog spec describes one, for tests: tables
// registered by metadata file, commits of updates under requirements,
// metadata kept as JSON maps (not Floe's types), numbers exact. It serves
// HTTP (httptest.NewServer(c)).
type Catalog struct {
	// Read returns a metadata file a register names.
	Read func(location string) []byte
	// Token is the bearer token every request must carry.
	Token string

	mu         sync.Mutex
	namespaces map[string]bool
	tables     map[string]*Table // "ns.name"
	commits    int
	raceNext   bool // the next commit meets a requirement another writer broke
}

// Table is a catalog's table: where its metadata is and what it holds.
type Table struct {
	Location string
	Metadata map[string]any
	version  int
}

// StoreReader reads the metadata files a catalog is given from store, by
// their URIs (the store's, then the key); nil for one it cannot read.
func StoreReader(store tiering.ObjectStore) func(location string) []byte {
	return func(location string) []byte {
		key := strings.TrimPrefix(location, strings.TrimSuffix(store.String(), "/")+"/")
		rc, err := store.Get(context.Background(), key, 0, -1)
		if err != nil {
			return nil
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil
		}
		return b
	}
}

// New is an empty catalog.
func New(read func(location string) []byte, token string) *Catalog {
	return &Catalog{Read: read, Token: token, namespaces: map[string]bool{}, tables: map[string]*Table{}}
}

// Table returns a copy of the catalog's table ns.name, or nil.
func (f *Catalog) Table(ns, name string) *Table {
	f.mu.Lock()
	defer f.mu.Unlock()
	tb := f.tables[ns+"."+name]
	if tb == nil {
		return nil
	}
	c := *tb
	return &c
}

// Commits is the commits the catalog took.
func (f *Catalog) Commits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits
}

// RaceNext makes the next commit fail as if another writer had moved the
// table first.
func (f *Catalog) RaceNext() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raceNext = true
}

// SetTableUUID changes the uuid of the catalog's table ns.name, as if it
// were another table.
func (f *Catalog) SetTableUUID(ns, name, uuid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tables[ns+"."+name].Metadata["table-uuid"] = uuid
}

func (f *Catalog) fail(w http.ResponseWriter, code int, typ, msg string) {
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func (f *Catalog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+f.Token {
		f.fail(w, 401, "NotAuthorizedException", "no token")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	if path == "config" {
		if r.URL.Query().Get("warehouse") != "wh" {
			f.fail(w, 400, "BadRequestException", "unknown warehouse")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{"prefix": "p1"}})
		return
	}
	rest, ok := strings.CutPrefix(path, "p1/namespaces")
	if !ok {
		f.fail(w, 404, "NoSuchResourceException", path)
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		if err := decodeNumbers(b, &body); err != nil {
			f.fail(w, 400, "BadRequestException", err.Error())
			return
		}
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		ns := body["namespace"].([]any)[0].(string)
		if f.namespaces[ns] {
			f.fail(w, 409, "AlreadyExistsException", "namespace "+ns)
			return
		}
		f.namespaces[ns] = true
		_ = json.NewEncoder(w).Encode(map[string]any{"namespace": []string{ns}})
	case len(parts) == 2 && parts[1] == "register" && r.Method == http.MethodPost:
		if !f.namespaces[parts[0]] {
			f.fail(w, 404, "NoSuchNamespaceException", parts[0])
			return
		}
		key := parts[0] + "." + body["name"].(string)
		if f.tables[key] != nil {
			f.fail(w, 409, "AlreadyExistsException", key)
			return
		}
		loc := body["metadata-location"].(string)
		var md map[string]any
		if err := decodeNumbers(f.Read(loc), &md); err != nil || md == nil {
			f.fail(w, 400, "BadRequestException", err.Error())
			return
		}
		f.tables[key] = &Table{Location: loc, Metadata: md}
		_ = json.NewEncoder(w).Encode(map[string]any{"metadata-location": loc, "metadata": md})
	case len(parts) == 3 && parts[1] == "tables":
		tb := f.tables[parts[0]+"."+parts[2]]
		if tb == nil {
			f.fail(w, 404, "NoSuchTableException", parts[2])
			return
		}
		if r.Method == http.MethodPost {
			if err := f.commit(tb, body); err != nil {
				f.fail(w, 409, "CommitFailedException", err.Error())
				return
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"metadata-location": tb.Location, "metadata": tb.Metadata})
	default:
		f.fail(w, 400, "BadRequestException", r.Method+" "+path)
	}
}

// decodeNumbers decodes JSON keeping numbers exact (snapshot ids are
// 64-bit).
func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	return d.Decode(v)
}

// MainOf is the snapshot id the metadata's main branch names (nil: none).
func MainOf(md map[string]any) any {
	if refs, ok := md["refs"].(map[string]any); ok {
		if m, ok := refs["main"].(map[string]any); ok {
			return m["snapshot-id"]
		}
	}
	return nil
}

// commit checks the requirements and applies the updates, as a catalog
// does, into a metadata file of its own.
func (f *Catalog) commit(tb *Table, body map[string]any) error {
	if f.raceNext {
		f.raceNext = false
		return errors.New("requirement failed: branch main has changed")
	}
	for _, q := range body["requirements"].([]any) {
		q := q.(map[string]any)
		switch q["type"] {
		case "assert-table-uuid":
			if q["uuid"] != tb.Metadata["table-uuid"] {
				return fmt.Errorf("table uuid %v", q["uuid"])
			}
		case "assert-ref-snapshot-id":
			if fmt.Sprint(q["snapshot-id"]) != fmt.Sprint(MainOf(tb.Metadata)) {
				return fmt.Errorf("main is %v, not %v", MainOf(tb.Metadata), q["snapshot-id"])
			}
		default:
			return fmt.Errorf("requirement %v", q["type"])
		}
	}
	for _, u := range body["updates"].([]any) {
		u := u.(map[string]any)
		switch u["action"] {
		case "add-schema":
			tb.Metadata["schemas"] = append(tb.Metadata["schemas"].([]any), u["schema"])
			tb.Metadata["last-column-id"] = u["last-column-id"]
		case "set-current-schema":
			tb.Metadata["current-schema-id"] = u["schema-id"]
		case "add-snapshot":
			snap := u["snapshot"].(map[string]any)
			seq, _ := snap["sequence-number"].(json.Number).Int64()
			last, _ := tb.Metadata["last-sequence-number"].(json.Number).Int64()
			if seq <= last {
				return fmt.Errorf("snapshot sequence %v not past %v", snap["sequence-number"], tb.Metadata["last-sequence-number"])
			}
			tb.Metadata["snapshots"] = append(tb.Metadata["snapshots"].([]any), snap)
			tb.Metadata["last-sequence-number"] = snap["sequence-number"]
		case "set-snapshot-ref":
			found := false
			for _, s := range tb.Metadata["snapshots"].([]any) {
				found = found || s.(map[string]any)["snapshot-id"] == u["snapshot-id"]
			}
			if !found {
				return fmt.Errorf("ref to unknown snapshot %v", u["snapshot-id"])
			}
			tb.Metadata["refs"] = map[string]any{"main": map[string]any{"snapshot-id": u["snapshot-id"], "type": "branch"}}
			tb.Metadata["current-snapshot-id"] = u["snapshot-id"]
		case "remove-snapshots":
			var kept []any
			for _, s := range tb.Metadata["snapshots"].([]any) {
				if !slices.Contains(u["snapshot-ids"].([]any), s.(map[string]any)["snapshot-id"]) {
					kept = append(kept, s)
				}
			}
			tb.Metadata["snapshots"] = kept
		default:
			return fmt.Errorf("update %v", u["action"])
		}
	}
	f.commits++
	tb.version++
	tb.Location = fmt.Sprintf("catalog://p1/%d.metadata.json", tb.version)
	return nil
}
