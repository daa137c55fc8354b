package lakeengines

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering/lake"
)

// TestEnginesReadPrimaryKeyTable: a primary-key table of two buckets,
// tiered copy-on-write over four rounds, reads after each round in
// iceberg-go's scan and in DuckDB as in Floe's own scan and as its
// changelog says: each key's latest row, with its latest change's offset,
// no deleted key, the same counts and sums, bucket by bucket. Each bucket
// with rows has one live data file. A round that changes a bucket
// replaces its file (DELETED in the snapshot's manifest, the new one
// ADDED), the other bucket's file is carried over (EXISTING in the
// manifest the round folded, or in a manifest kept as it was), and a
// round that deletes every key of a bucket leaves it no file. The
// replaced files stay in the store with their stale rows: iceberg-go
// neither plans nor returns them, as it reads the manifests' live
// entries only. The lake schema's identifier field is the key.
func TestEnginesReadPrimaryKeyTable(t *testing.T) {
	const schema = "id BIGINT NOT NULL PRIMARY KEY, name STRING, amount BIGINT"
	w := newLakeWriter(t, t.TempDir(), "")
	w.buckets = 2
	rounds := []struct {
		name    string
		changes [2][]string // of bucket 0, of bucket 1
		// entries are the manifest entries of the round's snapshot,
		// sorted: each its status and its file, named by its bucket and
		// the round that wrote it.
		entries []string
	}{{
		name: "inserts",
		changes: [2][]string{{
			`+I {"id": 1, "name": "ann", "amount": 10}`,
			`+I {"id": 2, "name": "bob", "amount": 20}`,
			`+I {"id": 3, "name": "cy", "amount": 30}`,
			`+I {"id": 4, "name": "dee", "amount": 40}`,
		}, {
			`+I {"id": 11, "name": "eve", "amount": 100}`,
			`+I {"id": 12, "name": "fay", "amount": null}`,
			`+I {"id": 13, "name": null, "amount": 300}`,
		}},
		entries: []string{"ADDED bucket 0 round 1", "ADDED bucket 1 round 1"},
	}, {
		name: "bucket-0-updated-and-deleted-from",
		changes: [2][]string{{
			`-U {"id": 1, "name": "ann", "amount": 10}`,
			`+U {"id": 1, "name": "ann", "amount": 11}`,
			`-D {"id": 2, "name": "bob", "amount": 20}`,
			`-U {"id": 3, "name": "cy", "amount": 30}`,
			`+U {"id": 3, "name": "cy", "amount": 33}`,
			`-U {"id": 3, "name": "cy", "amount": 33}`,
			`+U {"id": 3, "name": "cyd", "amount": 34}`,
		}, nil},
		// The manifest listing bucket 0's file folded into the new one:
		// bucket 1's file, listed in it too, carried over.
		entries: []string{"ADDED bucket 0 round 2", "DELETED bucket 0 round 1", "EXISTING bucket 1 round 1"},
	}, {
		name: "deleted-key-back-bucket-1-emptied",
		changes: [2][]string{{
			`+I {"id": 2, "name": "bob2", "amount": 21}`,
			`-U {"id": 4, "name": "dee", "amount": 40}`,
			`+U {"id": 4, "name": null, "amount": 44}`,
			`-U {"id": 1, "name": "ann", "amount": 11}`,
			`+U {"id": 1, "name": "ann", "amount": null}`,
		}, {
			`-D {"id": 11, "name": "eve", "amount": 100}`,
			`-U {"id": 12, "name": "fay", "amount": null}`,
			`+U {"id": 12, "name": "fay", "amount": 201}`,
			`-D {"id": 12, "name": "fay", "amount": 201}`,
			`-D {"id": 13, "name": null, "amount": 300}`,
		}},
		// Bucket 1's file goes and none replaces it; the folded
		// manifest's DELETED entry is not carried on.
		entries: []string{"ADDED bucket 0 round 3", "DELETED bucket 0 round 2", "DELETED bucket 1 round 1"},
	}, {
		name:    "bucket-1-back",
		changes: [2][]string{nil, {`+I {"id": 12, "name": "fay2", "amount": 7}`}},
		// No file replaced: round 3's manifest kept as it is, its DELETED
		// entries with it, and a new one listing the new file.
		entries: []string{"ADDED bucket 0 round 3", "ADDED bucket 1 round 4", "DELETED bucket 0 round 2", "DELETED bucket 1 round 1"},
	}}
	names := map[string]string{} // a data file's base name to its name in entries
	for i, r := range rounds {
		for b, changes := range r.changes {
			w.appendChanges(schema, int32(b), changes)
		}
		w.round()
		v := readPKVersion(t, w, i+1, names)
		t.Run(r.name, func(t *testing.T) {
			sameLines(t, "the changelog's latest rows", v.want.lines(pkColumns...), v.floe.lines(pkColumns...))
			if !slices.Equal(v.entries, r.entries) {
				t.Fatalf("the snapshot's manifest entries:\n  %s\nwant:\n  %s", strings.Join(v.entries, "\n  "),
					strings.Join(r.entries, "\n  "))
			}
			for b := range w.buckets {
				rows := v.want.where(lake.BucketColumn, strconv.Itoa(int(b)))
				if want := min(len(rows), 1); len(v.byBucket[b]) != want {
					t.Fatalf("bucket %d of %d rows has %d live data files %v, want %d", b, len(rows), len(v.byBucket[b]), v.byBucket[b], want)
				}
			}
			t.Run("iceberg-go", func(t *testing.T) { checkIcebergPK(t, v) })
			t.Run("duckdb", func(t *testing.T) { checkDuckDBPK(t, v) })
		})
	}
}

// pkColumns are the columns compared across readers; pkBucketed adds the
// bucket, which the engines read from the files and Floe's scan has not.
var (
	pkColumns  = []string{"id", "name", "amount", lake.OffsetColumn}
	pkBucketed = append(slices.Clone(pkColumns), lake.BucketColumn)
)

// pkVersion is a committed version of a primary-key table: what its
// changelog says it holds, and what Floe's scan, index and manifests say.
type pkVersion struct {
	uri      string             // its metadata file
	want     readRows           // each key's latest row, by the changelog
	floe     readRows           // Floe's scan
	byBucket map[int32][]string // the data files of each bucket in Floe's index (base names)
	live     []string           // the data files the manifests list (local paths)
	deleted  []string           // those they list as DELETED (local paths)
	entries  []string           // the manifest entries: status and file name, sorted
}

// readPKVersion reads the writer's committed version, that of round;
// names, the data files' names by base name, gains the files the round
// wrote, "bucket <b> round <round>".
func readPKVersion(t *testing.T, w *lakeWriter, round int, names map[string]string) pkVersion {
	t.Helper()
	v := pkVersion{uri: w.metadataURI(), want: latestRows(t, w), floe: w.scanWithFloe(), byBucket: map[int32][]string{}}
	ix := w.index()
	for _, ref := range w.bucketRefs() {
		for _, span := range ix.Files(bucketKey(ref)) {
			base := path.Base(span.Key)
			v.byBucket[ref.Bucket] = append(v.byBucket[ref.Bucket], base)
			if names[base] == "" {
				names[base] = fmt.Sprintf("bucket %d round %d", ref.Bucket, round)
			}
		}
	}
	statuses := map[int]string{0: "EXISTING", 1: "ADDED", manifestDeleted: "DELETED"}
	for _, e := range w.manifestEntries() {
		name := names[path.Base(e.File.Path)]
		if name == "" {
			name = path.Base(e.File.Path) + " (never live)"
		}
		v.entries = append(v.entries, statuses[e.Status]+" "+name)
		if e.Status == manifestDeleted {
			v.deleted = append(v.deleted, localPath(e.File.Path))
		} else {
			v.live = append(v.live, localPath(e.File.Path))
		}
	}
	slices.Sort(v.entries)
	return v
}

// latestRows is the table as the writer's log, its changelog, says it
// is: each key's latest row, by the changes in offset order (+I and +U
// set the key's row, -D removes it, -U leaves it to the +U after it),
// with its latest change's offset and its bucket. It fails the test on a
// changelog no table writes: +I of a key present, -U, +U or -D of a key
// absent, or a -U or -D of another row than the key's.
func latestRows(t *testing.T, w *lakeWriter) readRows {
	t.Helper()
	var out readRows
	for _, ref := range w.bucketRefs() {
		b := bucketKey(ref)
		byKey := map[string]map[string]string{}
		for _, rec := range w.source.records[b] {
			s := w.schemas[rec.SchemaID]
			js, err := record.AppendRowJSON(nil, s, rec.Row)
			if err != nil {
				t.Fatal(err)
			}
			row := jsonValues(t, js)
			var key []string
			for _, c := range s.PrimaryKey {
				key = append(key, row[c])
			}
			k := strings.Join(key, ",")
			held, ok := byKey[k]
			if rec.Change == record.Insert && ok {
				t.Fatalf("bucket %d offset %d: +I of key %s, which the table has", b.Bucket, rec.Offset, k)
			} else if rec.Change != record.Insert && !ok {
				t.Fatalf("bucket %d offset %d: %v of key %s, which the table has not", b.Bucket, rec.Offset, rec.Change, k)
			}
			if rec.Change == record.UpdateBefore || rec.Change == record.Delete {
				for c, val := range row {
					if held[c] != val {
						t.Fatalf("bucket %d offset %d: %v %s, but key %s's row has %s=%s", b.Bucket, rec.Offset, rec.Change, js, k, c, held[c])
					}
				}
			}
			switch rec.Change {
			case record.Insert, record.UpdateAfter:
				row[lake.OffsetColumn] = strconv.FormatInt(rec.Offset, 10)
				row[lake.BucketColumn] = strconv.Itoa(int(b.Bucket))
				byKey[k] = row
			case record.Delete:
				delete(byKey, k)
			}
		}
		for _, row := range byKey {
			out = append(out, row)
		}
	}
	return out
}

// pkTotals is what each reader must count and sum: "count(*)
// count(amount) sum(amount)" of the whole table, then the same for each
// bucket with rows, after its number, in bucket order, as DuckDB prints
// them.
func pkTotals(t *testing.T, rows readRows) []string {
	t.Helper()
	totals := func(rs readRows) string {
		return fmt.Sprintf("%d %d %d", len(rs), rs.count("amount"), rs.sum(t, "amount"))
	}
	out := []string{totals(rows)}
	var buckets []int
	for _, r := range rows {
		b, err := strconv.Atoi(r[lake.BucketColumn])
		if err != nil {
			t.Fatalf("a row of bucket %q", r[lake.BucketColumn])
		}
		if !slices.Contains(buckets, b) {
			buckets = append(buckets, b)
		}
	}
	slices.Sort(buckets)
	for _, b := range buckets {
		out = append(out, strconv.Itoa(b)+" "+totals(rows.where(lake.BucketColumn, strconv.Itoa(b))))
	}
	return out
}

// checkIcebergPK: iceberg-go reads the version's rows as Floe's scan
// does, with the counts and sums the changelog gives, from the files
// Floe's index holds, and none of the DELETED files, which still hold
// rows the table no longer has.
func checkIcebergPK(t *testing.T, v pkVersion) {
	tbl := openIceberg(t, v.uri)
	var identifiers []string
	for _, id := range tbl.Schema().IdentifierFieldIDs {
		name, _ := tbl.Schema().FindColumnName(id)
		identifiers = append(identifiers, name)
	}
	if !slices.Equal(identifiers, []string{"id"}) {
		t.Fatalf("iceberg-go reads the identifier fields %v, want the key, [id]", identifiers)
	}
	if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpOverwrite {
		t.Fatalf("iceberg-go reads the snapshot's operation as %q, want %q", op, table.OpOverwrite)
	}
	scan := tbl.Scan(table.WithSelectedFields(pkBucketed...))
	tasks, err := scan.PlanFiles(t.Context())
	scan.Close()
	if err != nil {
		t.Fatalf("iceberg-go plans the scan: %v", err)
	}
	var planned, held []string
	for _, task := range tasks {
		planned = append(planned, path.Base(task.File.FilePath()))
	}
	for _, files := range v.byBucket {
		held = append(held, files...)
	}
	slices.Sort(planned)
	slices.Sort(held)
	if !slices.Equal(planned, held) {
		t.Fatalf("iceberg-go plans the files %v; Floe's index holds %v", planned, held)
	}
	rows := icebergRows(t, v.uri, iceberg.AlwaysTrue{}, pkBucketed...)
	sameLines(t, "iceberg-go's scan", rows.lines(pkColumns...), v.floe.lines(pkColumns...))
	if got, want := pkTotals(t, rows), pkTotals(t, v.want); !slices.Equal(got, want) {
		t.Fatalf("iceberg-go's totals (count(*) count(amount) sum(amount), then by bucket): %q; the changelog's: %q", got, want)
	}
	has, returned := v.want.lines(pkBucketed...), rows.lines(pkBucketed...)
	for _, f := range v.deleted {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a DELETED data file is gone from the store: %v", err)
		}
		stale := 0
		for _, line := range duckDBLines(t, []string{f}, pkBucketed...) {
			if _, found := slices.BinarySearch(has, line); found {
				continue
			}
			stale++
			if _, found := slices.BinarySearch(returned, line); found {
				t.Fatalf("iceberg-go returns %s, a row of DELETED data file %s that the table no longer has", line, path.Base(f))
			}
		}
		if stale == 0 {
			t.Fatalf("DELETED data file %s holds only rows the table has: that iceberg-go skips it shows nothing", path.Base(f))
		}
	}
}

// checkDuckDBPK: DuckDB, over the files the manifests list, reads the
// version's rows as Floe's scan does, with the counts and sums the
// changelog gives, and each file holds the rows of one bucket, the one
// Floe's index has it in.
func checkDuckDBPK(t *testing.T, v pkVersion) {
	sameLines(t, "DuckDB", duckDBLines(t, v.live, pkColumns...), v.floe.lines(pkColumns...))
	got := queryDuckDB(t, v.live, "SELECT count(*), count(amount), sum(amount) FROM LAKE")
	got = append(got, queryDuckDB(t, v.live,
		"SELECT __bucket, count(*), count(amount), sum(amount) FROM LAKE GROUP BY __bucket ORDER BY __bucket")...)
	if want := pkTotals(t, v.want); !slices.Equal(got, want) {
		t.Fatalf("DuckDB's totals (count(*) count(amount) sum(amount), then by bucket): %q; the changelog's: %q", got, want)
	}
	for _, f := range v.live {
		buckets := queryDuckDB(t, []string{f}, "SELECT DISTINCT __bucket FROM LAKE")
		if len(buckets) != 1 {
			t.Fatalf("data file %s holds the rows of buckets %v", path.Base(f), buckets)
		}
		b, _ := strconv.Atoi(buckets[0])
		if !slices.Contains(v.byBucket[int32(b)], path.Base(f)) {
			t.Fatalf("data file %s holds bucket %d's rows; Floe's index has it in none of that bucket's files %v", path.Base(f), b,
				v.byBucket[int32(b)])
		}
	}
}
