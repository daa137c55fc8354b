package lake_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/icebergrest"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// TestRESTCatalogSync: a lake table is registered in a REST catalog at
// its first version, then each sync commits what changed (new snapshots,
// a schema added by ALTER TABLE, expired snapshots removed, the main
// branch moved) under the requirement that the catalog's branch is the
// one it read; a commit refused because another writer moved it fails,
// and the next sync succeeds; a sync with nothing new changes nothing.
func TestRESTCatalogSync(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := tiering.NewFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl := lake.NewTable(store, "lake/app/events-3")
	fake := icebergrest.New(icebergrest.StoreReader(store), "s3cret")
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cat, err := lake.NewRESTCatalog(srv.URL, "wh", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.NewRESTCatalog("ftp://x", "", ""); err == nil {
		t.Fatal("an ftp catalog URI taken")
	}

	s1, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	s2, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING, note STRING")
	schemas := map[int32]record.Schema{1: s1}
	src := &memSource{records: map[int32][]lake.Record{}, hw: map[int32]int64{}}
	com := &memCommitter{offsets: map[int32]int64{}}
	current := int32(1)
	var nowMs int64 = 1_000
	var retention time.Duration
	round := func(rows ...string) {
		t.Helper()
		for _, js := range rows {
			off := src.hw[0]
			src.records[0] = append(src.records[0], lake.Record{Offset: off, TimestampMs: nowMs, SchemaID: current, Row: mustRow(t, schemas[current], js)})
			src.hw[0] = off + 1
		}
		nowMs += 60_000
		if _, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: schemas, CurrentID: current,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f70", Version: com.version, MetadataKey: com.key,
			Buckets:    []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 3, Bucket: 0}, Offset: com.offsets[0]}},
			MaxRecords: 1000, NowMs: nowMs, Retention: retention}, src, com); err != nil {
			t.Fatal(err)
		}
	}
	sync := func() bool {
		t.Helper()
		m, err := tbl.ReadStaged(ctx, com.key)
		if err != nil {
			t.Fatal(err)
		}
		changed, err := cat.Sync(ctx, "app", "events", tbl.VersionURI(int(com.version)), m)
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	// agrees checks the catalog's table holds the lake's schemas,
	// snapshots and current snapshot.
	agrees := func(what string) {
		t.Helper()
		m, err := tbl.ReadStaged(ctx, com.key)
		if err != nil {
			t.Fatal(err)
		}
		md := fake.Table("app", "events").Metadata
		var snaps []string
		for _, s := range md["snapshots"].([]any) {
			snaps = append(snaps, fmt.Sprint(s.(map[string]any)["snapshot-id"]))
		}
		var want []string
		for _, s := range m.Snapshots {
			want = append(want, fmt.Sprint(s.ID))
		}
		if fmt.Sprint(snaps) != fmt.Sprint(want) || fmt.Sprint(icebergrest.MainOf(md)) != fmt.Sprint(*m.CurrentSnapshotID) ||
			fmt.Sprint(md["current-schema-id"]) != fmt.Sprint(m.CurrentSchemaID) || len(md["schemas"].([]any)) != len(m.Schemas) {
			t.Fatalf("%s: the catalog holds snapshots %v (main %v), schema %v of %d; the lake %v (current %d), schema %d of %d",
				what, snaps, icebergrest.MainOf(md), md["current-schema-id"], len(md["schemas"].([]any)), want, *m.CurrentSnapshotID, m.CurrentSchemaID, len(m.Schemas))
		}
	}

	round(`{"id": 1, "name": "a"}`)
	if !sync() || fake.Table("app", "events") == nil || fake.Table("app", "events").Location != tbl.VersionURI(1) || fake.Commits() != 0 {
		t.Fatalf("the first sync did not register version 1: %+v", fake.Table("app", "events"))
	}
	agrees("registered")
	if sync() {
		t.Fatal("a sync with nothing new changed the catalog")
	}

	round(`{"id": 2, "name": "b"}`)
	round(`{"id": 3, "name": "c"}`)
	if !sync() || fake.Commits() != 1 {
		t.Fatalf("two new versions: %d commits", fake.Commits())
	}
	agrees("two snapshots added")
	if sync() {
		t.Fatal("a sync of the version the catalog holds (in a file of its own) changed it")
	}

	// ALTER TABLE adds a column: the catalog gets the schema.
	schemas[2], current = s2, 2
	round(`{"id": 4, "name": "d", "note": "n"}`)
	// Another writer moves the catalog's branch first: the commit fails,
	// the next sync reads again and commits.
	fake.RaceNext()
	m, _ := tbl.ReadStaged(ctx, com.key)
	if _, err := cat.Sync(ctx, "app", "events", tbl.VersionURI(int(com.version)), m); !errors.Is(err, lake.ErrCatalog) {
		t.Fatalf("a commit the catalog refused: %v", err)
	}
	if !sync() {
		t.Fatal("the sync after a refused commit changed nothing")
	}
	agrees("schema added")

	// Snapshots expire: the catalog drops them too.
	retention = time.Millisecond
	round(`{"id": 5, "name": "e", "note": null}`)
	if !sync() {
		t.Fatal("expired snapshots: nothing synced")
	}
	agrees("snapshots expired")

	// A catalog table of another lake table is not overwritten.
	fake.SetTableUUID("app", "events", "00000000-0000-4000-8000-000000000000")
	round(`{"id": 6, "name": "f", "note": null}`)
	m, _ = tbl.ReadStaged(ctx, com.key)
	if _, err := cat.Sync(ctx, "app", "events", tbl.VersionURI(int(com.version)), m); !errors.Is(err, lake.ErrCatalog) || !strings.Contains(err.Error(), "is table") {
		t.Fatalf("a sync over another table's entry: %v", err)
	}
	// A wrong token is refused with the catalog's words.
	bad, _ := lake.NewRESTCatalog(srv.URL, "wh", "wrong")
	if _, err := bad.Sync(ctx, "app", "other", tbl.VersionURI(1), m); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token: %v", err)
	}
}
