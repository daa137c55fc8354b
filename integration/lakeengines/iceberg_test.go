package lakeengines

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// lakeWriter commits rows to a lake table the way the cluster's tiering
// does, with lake.RunRound: the rows of each partition value are the
// records of its own physical table (a partition), in bucket 0 of its
// buckets unless a primary-key table's changes name another, and each
// round (a commit) goes over every bucket.
type lakeWriter struct {
	t       *testing.T
	tbl     *lake.Table
	meta    *lake.Metadata
	version int
	key     string
	partBy  string
	buckets int32 // of each physical table: 1 unless set before the first append
	schemas map[int32]record.Schema
	current int32
	source  *memSource
	parts   map[string]uint64 // partition value (as text) to its physical id
	values  map[string][]lake.PartitionValue
	order   []string
	lakeAt  map[lake.BucketKey]int64 // committed lake offsets
	pending int                      // records appended since the last round
}

func newLakeWriter(t *testing.T, dir, partitionBy string) *lakeWriter {
	store, err := tiering.NewFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &lakeWriter{t: t, tbl: lake.NewTable(store, "wh/app/events"), partBy: partitionBy, buckets: 1, schemas: map[int32]record.Schema{},
		source: &memSource{records: map[lake.BucketKey][]lake.Record{}}, parts: map[string]uint64{}, values: map[string][]lake.PartitionValue{},
		lakeAt: map[lake.BucketKey]int64{}}
}

// memSource serves each bucket's records from memory, all committed.
type memSource struct {
	records map[lake.BucketKey][]lake.Record
}

func (s *memSource) ReadBucket(_ context.Context, b lake.BucketRef, from int64, maxRecords int, fn func(lake.Record) error) (int64, error) {
	next := from
	for _, r := range s.records[bucketKey(b)] {
		if r.Offset < from || int(r.Offset-from) >= maxRecords {
			continue
		}
		if err := fn(r); errors.Is(err, lake.ErrRoundFull) {
			return r.Offset + 1, nil
		} else if err != nil {
			return from, err
		}
		next = r.Offset + 1
	}
	return next, nil
}

// Commit is the controller's compare-and-set on the lake version.
func (w *lakeWriter) Commit(_ context.Context, expected int64, key string, offsets []lake.Offset) error {
	if expected != int64(w.version) {
		return fmt.Errorf("%w: version %d expected, committed is %d", lake.ErrFenced, expected, w.version)
	}
	w.version++
	w.key = key
	for _, o := range offsets {
		w.lakeAt[bucketKey(o.Bucket)] = o.Offset
	}
	return nil
}

// bucketKey is the bucket b names.
func bucketKey(b lake.BucketRef) lake.BucketKey {
	return lake.BucketKey{PhysicalID: b.PhysicalID, Bucket: b.Bucket}
}

// bucketRefs is every bucket of the physical tables written to, in the
// order their partitions were first written.
func (w *lakeWriter) bucketRefs() []lake.BucketRef {
	var out []lake.BucketRef
	for _, key := range w.order {
		for b := range w.buckets {
			out = append(out, lake.BucketRef{PhysicalID: w.parts[key], Bucket: b, Partition: w.values[key]})
		}
	}
	return out
}

// primaryKey reports whether the current schema has a primary key: the
// rounds then tier the table copy-on-write.
func (w *lakeWriter) primaryKey() bool { return len(w.schemas[w.current].PrimaryKey) > 0 }

// commit writes rows (JSON objects of schema) as one round; the schema
// may have columns added since the last commit.
func (w *lakeWriter) commit(schema string, rows []string) {
	w.append(schema, rows)
	w.round()
}

// append adds rows (JSON objects of schema) to the log of their
// partition's bucket, not yet tiered: a schema with columns added since
// the last one is a new version, the current one; an earlier schema keeps
// its version, as records written before an ALTER TABLE do.
func (w *lakeWriter) append(schema string, rows []string) {
	s, id := w.parseSchema(schema)
	for _, js := range rows {
		w.appendRecord(s, id, 0, record.AppendOnly, js)
	}
}

// appendChanges adds a primary-key table's changelog records to the log
// of bucket (of their partition), not yet tiered: each a change in
// changelog notation and the row as a JSON object of schema, as in
// `-U {"id": 1, "name": "ann"}`. schema versions as append's do.
func (w *lakeWriter) appendChanges(schema string, bucket int32, changes []string) {
	t := w.t
	s, id := w.parseSchema(schema)
	if bucket < 0 || bucket >= w.buckets {
		t.Fatalf("bucket %d of a table of %d buckets", bucket, w.buckets)
	}
	for _, line := range changes {
		notation, js, _ := strings.Cut(line, " ")
		c, ok := changeTypes[notation]
		if !ok {
			t.Fatalf("change %q: %q is not +I, -U, +U or -D", line, notation)
		}
		w.appendRecord(s, id, bucket, c, js)
	}
}

// changeTypes are a primary-key table's changes by their notation.
var changeTypes = map[string]record.ChangeType{
	record.Insert.String(): record.Insert, record.UpdateBefore.String(): record.UpdateBefore,
	record.UpdateAfter.String(): record.UpdateAfter, record.Delete.String(): record.Delete,
}

// parseSchema reads schema and finds its version.
func (w *lakeWriter) parseSchema(schema string) (record.Schema, int32) {
	s, err := record.ParseSchema(schema)
	if err != nil {
		w.t.Fatal(err)
	}
	return s, w.schemaID(s)
}

// appendRecord adds the row js (a JSON object of s, schema version id)
// to the log of bucket of its partition, at the log's end, as change.
func (w *lakeWriter) appendRecord(s record.Schema, id, bucket int32, change record.ChangeType, js string) {
	t := w.t
	row, err := record.AppendRowFromJSON(nil, s, []byte(js))
	if err != nil {
		t.Fatalf("row %s: %v", js, err)
	}
	key := ""
	var values []lake.PartitionValue
	if w.partBy != "" {
		partCol, ok := s.ColumnIndex(w.partBy)
		if !ok {
			t.Fatalf("partition column %s is not in %s", w.partBy, s)
		}
		var v lake.PartitionValue
		key, v = partitionValue(t, s, row, partCol)
		values = []lake.PartitionValue{v}
	}
	phys, ok := w.parts[key]
	if !ok {
		phys = uint64(100 + len(w.parts))
		w.parts[key] = phys
		w.values[key] = values
		w.order = append(w.order, key)
	}
	b := lake.BucketKey{PhysicalID: phys, Bucket: bucket}
	recs := w.source.records[b]
	off := int64(len(recs))
	w.source.records[b] = append(recs, lake.Record{Offset: off, TimestampMs: 1_700_000_000_000 + off, SchemaID: id, Row: row,
		Change: change})
	w.pending++
}

// schemaID is the version of schema s: an existing one equal to it, or a
// new one, which becomes the current version.
func (w *lakeWriter) schemaID(s record.Schema) int32 {
	for id, v := range w.schemas {
		if v.Equal(s) {
			return id
		}
	}
	w.current++
	w.schemas[w.current] = s
	return w.current
}

// round tiers every bucket's records past its lake offset in one
// lake.RunRound, in the current schema version, and checks it committed
// every record appended since the last round.
func (w *lakeWriter) round() {
	t := w.t
	ctx := t.Context()
	var buckets []lake.Offset
	for _, ref := range w.bucketRefs() {
		buckets = append(buckets, lake.Offset{Bucket: ref, Offset: w.lakeAt[bucketKey(ref)]})
	}
	var by []string
	if w.partBy != "" {
		by = []string{w.partBy}
	}
	res, err := lake.RunRound(ctx, lake.Round{Table: w.tbl, Schemas: w.schemas, CurrentID: w.current, PartitionBy: by,
		TableUUID: "0b9a3f50-7a8e-4d0b-9a51-8a4b7c0d2e13", Version: int64(w.version), MetadataKey: w.key,
		Buckets: buckets, MaxRecords: 1 << 20, NowMs: 2000 + int64(w.version)}, w.source, w)
	if err != nil {
		t.Fatal(err)
	}
	// A primary-key table's round counts the rows of the files it wrote
	// again, not the changes it read: that every bucket's lake offset
	// reached its log's end says it took them all.
	if !w.primaryKey() && res.Records != int64(w.pending) {
		t.Fatalf("a round committed %d records of %d", res.Records, w.pending)
	}
	for _, ref := range w.bucketRefs() {
		b := bucketKey(ref)
		if end := int64(len(w.source.records[b])); w.lakeAt[b] != end {
			t.Fatalf("a round left bucket %d of %d at lake offset %d, its log ends at %d", b.Bucket, b.PhysicalID, w.lakeAt[b], end)
		}
	}
	w.pending = 0
	if w.meta, err = w.tbl.ReadVersion(ctx, w.version); err != nil {
		t.Fatal(err)
	}
}

// partitionValue is column c of row as the lake's partition spec types
// it, the way the tablet's lake source types a partition's values
// (server/tablet's lakePartitionValues), and its text, which names the
// partition here.
func partitionValue(t *testing.T, s record.Schema, row []byte, c int) (string, lake.PartitionValue) {
	t.Helper()
	v := record.NewRowView(s, row)
	if v.IsNull(c) {
		t.Fatalf("partition column %s is null", s.Columns[c].Name)
	}
	switch s.Columns[c].Type.Kind() {
	case record.KindString:
		return v.String(c), lake.PartitionValue{Type: "string", Value: v.String(c)}
	case record.KindTinyInt, record.KindSmallInt, record.KindInt:
		n := int32(v.Int64(c))
		return strconv.Itoa(int(n)), lake.PartitionValue{Type: "int", Value: n}
	case record.KindBigInt:
		n := v.Int64(c)
		return strconv.FormatInt(n, 10), lake.PartitionValue{Type: "long", Value: n}
	case record.KindDate:
		day := int32(v.Int64(c))
		return time.Unix(int64(day)*86400, 0).UTC().Format(time.DateOnly), lake.PartitionValue{Type: "date", Value: day}
	}
	t.Fatalf("partition column %s of type %v", s.Columns[c].Name, s.Columns[c].Type)
	return "", lake.PartitionValue{}
}

// metadataURI is the current version's metadata file, as engines open it.
func (w *lakeWriter) metadataURI() string {
	return strings.TrimSuffix(w.tbl.Location(), "") + fmt.Sprintf("/metadata/v%d.metadata.json", w.version)
}

// scanWithIceberg reads the table's current snapshot with iceberg-go and
// returns its rows as "col=value" strings in the order of columns,
// sorted.
func scanWithIceberg(t *testing.T, metadataURI string, columns ...string) []string {
	t.Helper()
	return icebergRows(t, metadataURI, iceberg.AlwaysTrue{}, columns...).lines(columns...)
}

// icebergScan is iceberg-go's scan of the table's current snapshot (the
// metadata file at metadataURI), of the rows filter keeps, with columns.
// Close it.
func icebergScan(t *testing.T, metadataURI string, filter iceberg.BooleanExpression, columns ...string) *table.Scan {
	t.Helper()
	return openIceberg(t, metadataURI).Scan(table.WithSelectedFields(columns...), table.WithRowFilter(filter))
}

// openIceberg is iceberg-go's table of the metadata file at metadataURI.
func openIceberg(t *testing.T, metadataURI string) *table.Table {
	t.Helper()
	tbl, err := table.NewFromLocation(t.Context(), []string{"app", "events"}, metadataURI, iceio.LoadFSFunc(nil, metadataURI), nil)
	if err != nil {
		t.Fatalf("iceberg-go opens %s: %v", metadataURI, err)
	}
	return tbl
}

// icebergRows reads, with iceberg-go's scan, the rows filter keeps.
func icebergRows(t *testing.T, metadataURI string, filter iceberg.BooleanExpression, columns ...string) readRows {
	t.Helper()
	scan := icebergScan(t, metadataURI, filter, columns...)
	defer scan.Close()
	at, err := scan.ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("iceberg-go scans %s: %v", metadataURI, err)
	}
	defer at.Release()
	return arrowRows(at)
}

// arrowRows is an Arrow table's rows, each value as Arrow's ValueStr
// writes it.
func arrowRows(at arrow.Table) readRows {
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	var out readRows
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := map[string]string{}
			for c := range int(rec.NumCols()) {
				row[rec.ColumnName(c)] = rec.Column(c).ValueStr(i)
			}
			out = append(out, row)
		}
	}
	return out
}

// TestIcebergGoReadsLogTable: iceberg-go's scan of a partitioned table
// Floe wrote in two commits, with a column added between them, returns
// every row once with the values written, the added column null in the
// rows written before it, and Floe's system columns.
func TestIcebergGoReadsLogTable(t *testing.T) {
	w := newLakeWriter(t, t.TempDir(), "region")
	w.commit("id BIGINT NOT NULL, region STRING NOT NULL, amount INT, at TIMESTAMP(3)", []string{
		`{"id": 1, "region": "eu", "amount": 10, "at": "2026-12-03 10:00:00.125"}`,
		`{"id": 2, "region": "us", "amount": null, "at": null}`,
		`{"id": 3, "region": "eu", "amount": -5, "at": "2026-12-03 11:00:00"}`,
	})
	w.commit("id BIGINT NOT NULL, region STRING NOT NULL, amount INT, at TIMESTAMP(3), note STRING", []string{
		`{"id": 4, "region": "us", "amount": 7, "at": null, "note": "late"}`,
		`{"id": 5, "region": "ap", "amount": 1, "at": null, "note": null}`,
	})
	got := scanWithIceberg(t, w.metadataURI(), "id", "region", "amount", "note", "__offset")
	want := []string{ // each region's rows are one bucket's records
		"id=1 region=eu amount=10 note=(null) __offset=0",
		"id=2 region=us amount=(null) note=(null) __offset=0",
		"id=3 region=eu amount=-5 note=(null) __offset=1",
		"id=4 region=us amount=7 note=late __offset=1",
		"id=5 region=ap amount=1 note=(null) __offset=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("iceberg-go read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
