package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// RESTCatalog registers lake tables in an Iceberg REST catalog, besides
// their metadata readable by path: engines configured with the catalog
// find a table as namespace.table (the Floe database and table) at the
// version the cluster last committed. The cluster stays the table's only
// writer: the first sync registers the table's metadata file
// (POST .../register); later syncs commit what changed since the
// catalog's version (POST .../tables/{table}: the schemas and snapshots it
// lacks, the snapshots it has that the lake expired, the main branch
// moved), asserting the catalog's table and branch are still those it
// read, so a commit that raced another is refused and the next sync
// reads again. It is safe for concurrent use.
type RESTCatalog struct {
	base      *url.URL
	warehouse string
	token     string // bearer token; "": none
	client    *http.Client

	mu     sync.Mutex
	prefix *string // from GET /v1/config, once
}

// ErrCatalog is the catalog refusing a request, or answering one in a way
// this client does not understand.
var ErrCatalog = errors.New("lake: rest catalog")

// maxCatalogResponseBytes bounds what the client reads of an answer (a
// table's metadata, with its snapshots).
const maxCatalogResponseBytes = 64 << 20

// NewRESTCatalog is the catalog at uri (http or https, the base the
// /v1/ paths hang from), of warehouse (optional), authenticated with the
// bearer token (optional).
func NewRESTCatalog(uri, warehouse, token string) (*RESTCatalog, error) {
	u, err := url.Parse(strings.TrimSuffix(uri, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: catalog URI %q: want http(s)://host[:port][/path]", ErrCatalog, uri)
	}
	return &RESTCatalog{base: u, warehouse: warehouse, token: token, client: &http.Client{Timeout: 30 * time.Second}}, nil
}

// String is the catalog's URI, any password in it hidden.
func (c *RESTCatalog) String() string { return c.base.Redacted() }

// catalogTable is what a sync reads of the catalog's table.
type catalogTable struct {
	Location string `json:"metadata-location"`
	Metadata struct {
		TableUUID       string `json:"table-uuid"`
		CurrentSchemaID int    `json:"current-schema-id"`
		Schemas         []struct {
			ID int `json:"schema-id"`
		} `json:"schemas"`
		Snapshots []struct {
			ID int64 `json:"snapshot-id"`
		} `json:"snapshots"`
		Refs map[string]struct {
			SnapshotID int64 `json:"snapshot-id"`
		} `json:"refs"`
	} `json:"metadata"`
}

// Sync makes the catalog's table namespace.name the version of the lake
// whose metadata file is at location and reads as m. It reports whether
// it changed the catalog.
func (c *RESTCatalog) Sync(ctx context.Context, namespace, name, location string, m *Metadata) (bool, error) {
	prefix, err := c.configPrefix(ctx)
	if err != nil {
		return false, err
	}
	tablePath := prefix + "namespaces/" + url.PathEscape(namespace) + "/tables/" + url.PathEscape(name)
	var cur catalogTable
	status, err := c.do(ctx, http.MethodGet, tablePath, nil, &cur)
	if err != nil {
		return false, err
	}
	if status == http.StatusNotFound {
		return true, c.register(ctx, prefix, namespace, name, location)
	}
	if cur.Location == location {
		return false, nil
	}
	if cur.Metadata.TableUUID != m.TableUUID {
		return false, fmt.Errorf("%w: %s.%s in the catalog is table %s, the lake's is %s", ErrCatalog, namespace, name, cur.Metadata.TableUUID, m.TableUUID)
	}
	updates, requirements := commitOf(&cur, m)
	if updates == nil {
		return false, nil // the same schemas, snapshots and branch, in a file of the catalog's own
	}
	req := map[string]any{
		"identifier":   map[string]any{"namespace": []string{namespace}, "name": name},
		"requirements": requirements,
		"updates":      updates,
	}
	if _, err := c.do(ctx, http.MethodPost, tablePath, req, nil); err != nil {
		return false, err
	}
	return true, nil
}

// commitOf is the updates that make the catalog's table (cur) m, and the
// requirements that it is still cur; nil updates when none are needed.
func commitOf(cur *catalogTable, m *Metadata) (updates, requirements []map[string]any) {
	haveSchema := map[int]bool{}
	for _, s := range cur.Metadata.Schemas {
		haveSchema[s.ID] = true
	}
	for _, s := range m.Schemas {
		if !haveSchema[s.ID] {
			updates = append(updates, map[string]any{"action": "add-schema", "schema": s, "last-column-id": m.LastColumnID})
		}
	}
	if cur.Metadata.CurrentSchemaID != m.CurrentSchemaID {
		updates = append(updates, map[string]any{"action": "set-current-schema", "schema-id": m.CurrentSchemaID})
	}
	haveSnap := map[int64]bool{}
	for _, s := range cur.Metadata.Snapshots {
		haveSnap[s.ID] = true
	}
	keep := map[int64]bool{}
	for _, s := range m.Snapshots {
		keep[s.ID] = true
		if !haveSnap[s.ID] {
			updates = append(updates, map[string]any{"action": "add-snapshot", "snapshot": s})
		}
	}
	main, hasMain := cur.Metadata.Refs["main"]
	if m.CurrentSnapshotID != nil && (!hasMain || main.SnapshotID != *m.CurrentSnapshotID) {
		updates = append(updates, map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
			"snapshot-id": *m.CurrentSnapshotID})
	}
	var gone []int64 // after main moved off them
	for _, s := range cur.Metadata.Snapshots {
		if !keep[s.ID] {
			gone = append(gone, s.ID)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		updates = append(updates, map[string]any{"action": "remove-snapshots", "snapshot-ids": gone})
	}
	if len(updates) == 0 {
		return nil, nil
	}
	requirements = []map[string]any{{"type": "assert-table-uuid", "uuid": m.TableUUID}}
	if hasMain {
		requirements = append(requirements, map[string]any{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main.SnapshotID})
	} else {
		requirements = append(requirements, map[string]any{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": nil})
	}
	return updates, requirements
}

// register creates the namespace if it is missing, then registers the
// table's metadata file.
func (c *RESTCatalog) register(ctx context.Context, prefix, namespace, name, location string) error {
	status, err := c.do(ctx, http.MethodPost, prefix+"namespaces", map[string]any{"namespace": []string{namespace}}, nil)
	if err != nil && status != http.StatusConflict {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, prefix+"namespaces/"+url.PathEscape(namespace)+"/register",
		map[string]any{"name": name, "metadata-location": location}, nil)
	return err
}

// configPrefix is the prefix the catalog's GET /v1/config gives the
// paths ("" or "p/"), asked once.
func (c *RESTCatalog) configPrefix(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prefix != nil {
		return *c.prefix, nil
	}
	path := "config"
	if c.warehouse != "" {
		path += "?warehouse=" + url.QueryEscape(c.warehouse)
	}
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	if _, err := c.do(ctx, http.MethodGet, path, nil, &cfg); err != nil {
		return "", err
	}
	p := cfg.Defaults["prefix"]
	if o, ok := cfg.Overrides["prefix"]; ok {
		p = o
	}
	if p != "" {
		p = strings.Trim(p, "/") + "/"
	}
	c.prefix = &p
	return p, nil
}

// do sends a request to /v1/path with body as JSON and decodes a 2xx
// answer into out. A 404 on GET is not an error (the status says it);
// any other status outside 2xx is, with the catalog's message.
func (c *RESTCatalog) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+"/v1/"+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %s: %w", ErrCatalog, method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	payload, err := io.ReadAll(io.LimitReader(resp.Body, maxCatalogResponseBytes+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%w: %s %s: %w", ErrCatalog, method, req.URL.Path, err)
	}
	if len(payload) > maxCatalogResponseBytes {
		return resp.StatusCode, fmt.Errorf("%w: %s %s: an answer over %d bytes", ErrCatalog, method, req.URL.Path, maxCatalogResponseBytes)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && method == http.MethodGet:
		return resp.StatusCode, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal(payload, &e)
		return resp.StatusCode, fmt.Errorf("%w: %s %s: %d %s: %s", ErrCatalog, method, req.URL.Path, resp.StatusCode, e.Error.Type, e.Error.Message)
	}
	if out != nil && len(payload) > 0 {
		if err := json.Unmarshal(payload, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%w: %s %s: %w", ErrCatalog, method, req.URL.Path, err)
		}
	}
	return resp.StatusCode, nil
}
