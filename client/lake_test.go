package client

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// waitLake waits until the lake of tbl (by its path in the nodes' remote
// store) holds want rows, and returns its metadata.
func waitLake(t *testing.T, tbl *Table, want int64) *lake.Metadata {
	t.Helper()
	ctx := guardCtx(t)
	lt := lake.NewTable(remoteStore, fmt.Sprintf("lake/%s/%s-%d", tbl.Info().Database, tbl.Info().Name, tbl.TableID()))
	var last string
	for {
		m, _, err := lt.ReadCurrent(ctx)
		if err == nil {
			n, err := lt.Rows(ctx, m)
			if err == nil && n == want {
				return m
			}
			last = fmt.Sprintf("%d rows, %v", n, err)
		} else if !errors.Is(err, tiering.ErrNotFound) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lake never held %d rows (last: %s)", want, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestLakeTiersLogTable: a lake-enabled log table's rows reach its lake,
// whose snapshot records every bucket's offset, within its freshness.
func TestLakeTiersLogTable(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "events", Schema: "id BIGINT NOT NULL, name STRING",
		Buckets: 2, Replication: 1, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "events")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, tbl, AppendWriterOptions{})
	appendIDs(t, w, tbl, 0, 100)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m := waitLake(t, tbl, 100)
	offsets, err := lake.ParseLogOffsets(m.CurrentSnapshot().Summary[lake.SummaryLogOffsets])
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for b := range int32(2) {
		sum += offsets[fmt.Sprintf("%d/%d", tbl.ID(), b)]
	}
	if sum != 100 {
		t.Fatalf("the lake's offsets %v sum to %d, want 100", offsets, sum)
	}
}

// TestLakeTiersPartitionedTable: each partition's rows reach the lake
// under its identity partition, and a partition created later joins.
func TestLakeTiersPartitionedTable(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "events", Schema: "id BIGINT NOT NULL, name STRING, region STRING NOT NULL",
		Buckets: 2, Replication: 1, PartitionKeys: []string{"region"},
		Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "events")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, tbl, AppendWriterOptions{})
	write := func(from, to int64, region string) {
		for id := from; id < to; id++ {
			e := tbl.NewRowEncoder()
			e.SetInt64(0, id)
			e.SetString(1, fmt.Sprintf("row-%d", id))
			e.SetString(2, region)
			row, err := e.Finish(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 30, "eu")
	write(30, 50, "us")
	waitLake(t, tbl, 50)
	write(50, 60, "ap") // a partition created on write, after the lake's first versions
	m := waitLake(t, tbl, 60)
	if spec := m.Spec(); len(spec.Fields) != 1 || spec.Fields[0].Name != "region" {
		t.Fatalf("partition spec %+v", spec)
	}
}
