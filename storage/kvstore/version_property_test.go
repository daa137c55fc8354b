package kvstore

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/floedb/floe/storage/record"
	"pgregory.net/rapid"
)

// versionedSchemas are a table's schema versions 1 to n: id BIGINT NOT
// NULL (the key) and v0 STRING, then one nullable STRING column more per
// version. Past version 7 the null bitmap is two bytes wide.
func versionedSchemas(n int) []record.Schema {
	out := make([]record.Schema, n)
	cols := []record.Column{{Name: "id", Type: record.BigInt()}, {Name: "v0", Type: record.String(), Nullable: true}}
	for i := range n {
		out[i] = record.Schema{Columns: slices.Clone(cols), PrimaryKey: []string{"id"}}
		cols = append(cols, record.Column{Name: fmt.Sprintf("v%d", i+1), Type: record.String(), Nullable: true})
	}
	return out
}

// TestVersionedRowsEqualModel runs random upserts and deletes, each row
// written in the schema version current then, interleaved with versions
// added (ADD COLUMN), over a store that starts with legacy rows (of the
// first version, without an id): every read (Get, GetBatch, PrefixScan,
// ScanPage, Export, through the row cache or not) gives each row with the
// version it was written in, and brought to the current version it equals
// the model; so does a copy through Export and a Loader (a KV snapshot
// and its restore).
func TestVersionedRowsEqualModel(t *testing.T) {
	const maxVersions = 10
	schemas := versionedSchemas(maxVersions)
	baseDir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		cfg := Config{Dir: filepath.Join(baseDir, fmt.Sprint(run))}
		if rapid.Bool().Draw(rt, "row cache") {
			cfg.RowCache = NewRowCache(1 << 20)
		}
		db, err := OpenDB(cfg)
		if err != nil {
			rt.Fatalf("OpenDB: %v", err)
		}
		defer db.Close()
		s, err := db.Open(testStoreID)
		if err != nil {
			rt.Fatalf("Open: %v", err)
		}
		s.CacheWrites(rapid.Bool().Draw(rt, "cache writes"))

		// model: key → the row's values (nil: null), as many as the
		// version it was written in has columns but the key.
		model := map[string][]*string{}
		cur := 0 // index into schemas of the current version; its id is cur+1
		encode := func(v int, id int64, vals []*string) []byte {
			enc, err := record.NewRowEncoder(schemas[v])
			if err != nil {
				rt.Fatal(err)
			}
			enc.SetInt64(0, id)
			for i, s := range vals {
				if s != nil {
					enc.SetString(i+1, *s)
				}
			}
			row, err := enc.Finish(nil)
			if err != nil {
				rt.Fatal(err)
			}
			return row
		}
		keyOf := func(id int64) []byte { return fmt.Appendf(nil, "k%02d", id) }
		idOf := func(key []byte) int64 {
			var id int64
			fmt.Sscanf(string(key), "k%d", &id)
			return id
		}
		// wantJSON is the model's row of key in the current version.
		wantJSON := func(key []byte) string {
			vals, ok := model[string(key)]
			if !ok {
				return ""
			}
			js, err := record.AppendRowJSON(nil, schemas[cur], encode(cur, idOf(key), vals))
			if err != nil {
				rt.Fatal(err)
			}
			return string(js)
		}
		// gotJSON brings a read row to the current version.
		gotJSON := func(what string, key []byte, r Row) string {
			if r.Data == nil {
				return ""
			}
			v := int(r.SchemaID) - 1
			if r.SchemaID == LegacySchemaID {
				v = 0
			}
			if v < 0 || v > cur {
				rt.Fatalf("%s of %s: schema id %d, the current is %d", what, key, r.SchemaID, cur+1)
			}
			if err := record.ValidateRow(schemas[v], r.Data); err != nil {
				rt.Fatalf("%s of %s: not a row of its version %d: %v", what, key, r.SchemaID, err)
			}
			up, err := record.UpgradeRow(schemas[v], schemas[cur], r.Data, nil)
			if err != nil {
				rt.Fatal(err)
			}
			js, err := record.AppendRowJSON(nil, schemas[cur], up)
			if err != nil {
				rt.Fatal(err)
			}
			return string(js)
		}
		randomVals := func(v int) []*string {
			vals := make([]*string, v+1)
			for i := range vals {
				if s := rapid.StringMatching(`[a-c]{0,6}`).Draw(rt, "value"); s != "" {
					vals[i] = &s
				}
			}
			return vals
		}

		// Legacy rows: stored by a build before versions, of version 1.
		loader, err := s.NewLoader()
		if err != nil {
			rt.Fatal(err)
		}
		for id := range rapid.Int64Range(0, 4).Draw(rt, "legacy rows") {
			vals := randomVals(0)
			if err := loader.Put(keyOf(id), LegacySchemaID, encode(0, id, vals)); err != nil {
				rt.Fatal(err)
			}
			model[string(keyOf(id))] = vals
		}
		if _, err := loader.Finish(1); err != nil {
			rt.Fatal(err)
		}

		allKeys := make([][]byte, 12)
		for i := range allKeys {
			allKeys[i] = keyOf(int64(i))
		}
		check := func(step int) {
			for _, k := range allKeys {
				r, ok, err := s.Get(k)
				if err != nil || ok != (r.Data != nil) {
					rt.Fatalf("step %d: Get %s: %v %v", step, k, ok, err)
				}
				if got, want := gotJSON("Get", k, r), wantJSON(k); got != want {
					rt.Fatalf("step %d: Get %s = %s; want %s", step, k, got, want)
				}
			}
			rows, err := s.GetBatch(allKeys)
			if err != nil {
				rt.Fatal(err)
			}
			for i, k := range allKeys {
				if got, want := gotJSON("GetBatch", k, rows[i]), wantJSON(k); got != want {
					rt.Fatalf("step %d: GetBatch %s = %s; want %s", step, k, got, want)
				}
			}
			n := 0
			if err := s.PrefixScan(nil, func(key []byte, r Row) error {
				n++
				if got, want := gotJSON("PrefixScan", key, r), wantJSON(key); got != want {
					rt.Fatalf("step %d: PrefixScan %s = %s; want %s", step, key, got, want)
				}
				return nil
			}); err != nil || n != len(model) {
				rt.Fatalf("step %d: PrefixScan: %d rows, %v; the model has %d", step, n, err, len(model))
			}
			p, err := s.ScanPage(nil, 100, 1<<20, nil)
			if err != nil || len(p.Sizes) != len(model) || len(p.SchemaIDs) != len(model) {
				rt.Fatalf("step %d: ScanPage: %d rows, %v; the model has %d", step, len(p.Sizes), err, len(model))
			}
			at := 0
			for i, k := range slices.Sorted(maps.Keys(model)) {
				r := Row{SchemaID: p.SchemaIDs[i], Data: p.Rows[at : at+int(p.Sizes[i])]}
				at += int(p.Sizes[i])
				if got, want := gotJSON("ScanPage", []byte(k), r), wantJSON([]byte(k)); got != want {
					rt.Fatalf("step %d: ScanPage %s = %s; want %s", step, k, got, want)
				}
			}
		}

		next := int64(1)
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for step := range steps {
			id := rapid.Int64Range(0, int64(len(allKeys)-1)).Draw(rt, "id")
			key := keyOf(id)
			next++
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 2 && cur < maxVersions-1:
				cur++ // ADD COLUMN: nothing stored changes
				next--
			case op < 4:
				if err := s.Apply([]Change{{Key: key, Row: encode(cur, id, nil), Kind: record.Delete, SchemaID: int16(cur + 1)}}, next); err != nil {
					rt.Fatalf("Apply delete: %v", err)
				}
				delete(model, string(key))
			default:
				vals := randomVals(cur)
				kind := record.Insert
				if _, ok := model[string(key)]; ok {
					kind = record.UpdateAfter
				}
				if err := s.Apply([]Change{{Key: key, Row: encode(cur, id, vals), Kind: kind, SchemaID: int16(cur + 1)}}, next); err != nil {
					rt.Fatalf("Apply: %v", err)
				}
				model[string(key)] = vals
			}
			check(step)
		}

		// A snapshot and its restore keep every row's version.
		copied, err := db.Open(StoreID{Table: testStoreID.Table + 1})
		if err != nil {
			rt.Fatal(err)
		}
		defer copied.Close()
		loader, err = copied.NewLoader()
		if err != nil {
			rt.Fatal(err)
		}
		applied, err := s.Export(func(key []byte, r Row) error { return loader.Put(key, r.SchemaID, r.Data) })
		if err != nil {
			rt.Fatal(err)
		}
		if _, err := loader.Finish(applied); err != nil {
			rt.Fatal(err)
		}
		s = copied
		check(steps)
	})
}
