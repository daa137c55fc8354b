package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedb/floe/storage/record"
)

// BucketRef names one bucket a tiering task reads: the physical table (a
// table's id, or a partition's) and the bucket number, with the
// partition's values (none for a table that is not partitioned).
type BucketRef struct {
	PhysicalID uint64
	Bucket     int32
	Partition  []PartitionValue
}

// key is the bucket's key in a snapshot's floe.log-offsets.
func (b BucketRef) key() string {
	return strconv.FormatUint(b.PhysicalID, 10) + "/" + strconv.Itoa(int(b.Bucket))
}

// Record is a log record as the lake takes it: a row of the table's
// schema version SchemaID, at Offset, with its timestamp. Or, with Batch
// set, a whole Arrow batch of that version (arrowlog's columns), its
// records at offsets from Offset on: its columns go to Parquet as they
// are, which costs a fraction of decoding its rows. The source keeps the
// batch; the round does not hold it past the call.
type Record struct {
	Offset      int64
	TimestampMs int64
	SchemaID    int32
	Row         []byte
	Batch       arrow.RecordBatch
	// Change is what a primary-key table's record does (+I, -U, +U, -D);
	// a log table's are append-only.
	Change record.ChangeType
}

// Source reads the committed records of a task's buckets.
type Source interface {
	// ReadBucket calls fn for each record of b from offset from on, in
	// offset order, up to the bucket's committed end (its high watermark)
	// or until maxRecords are read, and returns the offset after the last
	// record it passed (from, when none). When fn returns ErrRoundFull it
	// took the record and wants no more: ReadBucket stops and returns the
	// offset after that record, without error.
	ReadBucket(ctx context.Context, b BucketRef, from int64, maxRecords int, fn func(Record) error) (next int64, err error)
}

// ErrRoundFull is what a round's record callback returns when the round
// holds its MaxBytes of files: the source stops reading.
var ErrRoundFull = errors.New("lake: round full")

// DefaultRoundBytes is Round.MaxBytes' default: the data files one round
// holds in memory before it commits them.
const DefaultRoundBytes = 128 << 20

// Offset is where a bucket's records in the lake end after a commit.
type Offset struct {
	Bucket BucketRef
	Offset int64
}

// ErrFenced: the controller refused a commit, because the task is no
// longer the node's or the lake moved to another version; the task reads
// the lake's state again before another round.
var ErrFenced = errors.New("lake: commit fenced")

// Committer commits a staged version through the controller: the version
// after expectedVersion, its metadata file, and the buckets' new offsets.
// A refusal of the fence or the version is ErrFenced.
type Committer interface {
	Commit(ctx context.Context, expectedVersion int64, metadataKey string, offsets []Offset) error
}

// SummaryLogOffsets is the snapshot summary key under which Floe records,
// for each bucket, the offset below which the lake holds its records: a
// JSON object of "physical id/bucket" to offset.
const SummaryLogOffsets = "floe.log-offsets"

// Round is one tiering round of a task: what it starts from.
type Round struct {
	Table *Table
	// Schemas are the table's schema versions by id; Current the one
	// rows are written in (older rows are upgraded to it).
	Schemas   map[int32]record.Schema
	CurrentID int32
	// PartitionBy names the partition columns; TableUUID is the lake
	// table's.
	PartitionBy []string
	TableUUID   string
	// Version and MetadataKey are the committed lake version and its
	// staged metadata file (0 and "": none yet).
	Version     int64
	MetadataKey string
	// Buckets are the task's buckets and the offsets their records in
	// the lake end at (their committed lake offsets).
	Buckets []Offset
	// MaxRecords bounds the records read from one bucket in a round;
	// MaxBytes the round's data files, held in memory until the commit
	// (0: DefaultRoundBytes). A round that reaches it commits what it has
	// and leaves the rest to the next.
	MaxRecords int
	MaxBytes   int64
	// Retention expires the snapshots older than it (datalake.retention;
	// 0: none): each commit drops them from the metadata and, once
	// committed, deletes their manifest lists.
	Retention time.Duration
	// Reload, when set, reads the committed version and its metadata
	// file again after a commit was refused, or returns ErrFenced when the
	// task is no longer this one's: the round then commits its files on
	// top of that version instead of dropping them.
	Reload func(ctx context.Context) (version int64, metadataKey string, err error)
	NowMs  int64
	// Index, when set, is an earlier version's index (an earlier round's
	// RoundResult.Index): the round reads only the manifests it lacks.
	Index *Index
	// NoCompaction leaves a log table's small files as they are.
	NoCompaction bool
}

// RoundResult says what a round committed.
type RoundResult struct {
	Version int64
	Files   int
	Records int64
	Offsets []Offset // the buckets that moved
	// Expired is the snapshots the commit expired; MetadataKey the
	// committed version's staged metadata file.
	Expired     int
	MetadataKey string
	// Full: the round stopped at its MaxBytes or a bucket at MaxRecords,
	// so more is there to read: the next round may start at once.
	Full bool
	// Compacted is the small files the round merged, into Merged files.
	Compacted, Merged int
	// Index is the index of the version the round built on, for the
	// next round's Round.Index.
	Index *Index
	// Cut is the buckets whose files the round cut back to the offset
	// the metadata holds for them (an unclean election's fence cut);
	// Rebuilt the primary-key buckets it wrote again from their leaders'
	// stores instead (rebuildBucket), with their new offsets; Stuck those
	// that must wait for it (docs/lake.md).
	Cut     []Offset
	Rebuilt []Offset
	Stuck   []BucketRef
}

// RunRound reads each bucket's records past its lake offset, writes them
// as one data file per partition, stages a snapshot appending the files
// and commits it (expected version r.Version); once committed, it
// publishes the version by path. Nothing read: nothing committed. A
// refused commit is ErrFenced, and what the round wrote is garbage no
// version references.
func RunRound(ctx context.Context, r Round, src Source, commit Committer) (RoundResult, error) {
	current, ok := r.Schemas[r.CurrentID]
	if !ok {
		return RoundResult{}, fmt.Errorf("lake: no schema version %d", r.CurrentID)
	}
	var base *Metadata
	var ix *Index // the base version's files
	var err error
	if r.Version > 0 {
		if base, err = r.Table.ReadStaged(ctx, r.MetadataKey); err != nil {
			return RoundResult{}, err
		}
		// Before the round changes base (its schema, then the staged
		// version).
		if ix, err = r.Table.IndexOf(ctx, r.MetadataKey, base, r.Index); err != nil {
			return RoundResult{}, err
		}
	}
	var prev *Schema
	lastID := 0
	if base != nil {
		prev, lastID = base.CurrentSchema(), base.LastColumnID
	}
	ls, err := NewSchema(0, current, prev, &lastID)
	if err != nil {
		return RoundResult{}, err
	}
	create := func() (*Metadata, error) {
		return NewMetadata(r.Table.Location(), r.TableUUID, ls, lastID, r.PartitionBy, map[string]string{"floe.table": "true"}, r.NowMs)
	}
	spec := PartitionSpec{}
	if base != nil {
		base.SetSchema(ls, lastID)
		spec = base.Spec()
	} else {
		m, err := create()
		if err != nil {
			return RoundResult{}, err
		}
		spec = m.Spec()
	}
	res := RoundResult{Version: r.Version}
	maxBytes := r.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultRoundBytes
	}
	var files []DataFile
	var upgraded []byte
	var held int64 // bytes of the round's finished files
	primaryKey := len(current.PrimaryKey) > 0
	var removed []string // the files the new ones replace
	res.Index = ix
	// replaced takes a primary-key bucket's new file (none: every row
	// gone) in place of its files gone, the bucket's lake at next.
	replaced := func(b BucketRef, df *DataFile, gone []string, next int64) {
		if df != nil {
			files = append(files, *df)
			held += df.SizeBytes
			res.Records += df.RecordCount
		}
		removed = append(removed, gone...)
		res.Offsets = append(res.Offsets, Offset{Bucket: b, Offset: next})
	}
	for _, b := range r.Buckets {
		if held >= maxBytes {
			res.Full = true
			break // the next round goes on from these buckets' offsets
		}
		bk := BucketKey{PhysicalID: b.Bucket.PhysicalID, Bucket: b.Bucket.Bucket}
		if end, ok := ix.End(bk); ok && end > b.Offset {
			// The lake holds the bucket past where the metadata says: an
			// unclean election's fence cut lowered its offset, the log's
			// new history parting from the lake's there (replication.md's
			// Lake 4). The lake's files go back to it first.
			if primaryKey {
				// Each key's latest row as of the cut is not in the lake
				// any more: the bucket's lake is written again from its
				// leader's store, or waits for a source that can read it.
				sc, ok := src.(BucketScanner)
				if !ok {
					res.Stuck = append(res.Stuck, b.Bucket)
					continue
				}
				df, gone, next, ok, err := r.rebuildBucket(ctx, sc, src, ix, b, current, ls, spec)
				if err != nil {
					return RoundResult{}, err
				}
				if !ok {
					res.Stuck = append(res.Stuck, b.Bucket)
					continue
				}
				replaced(b.Bucket, df, gone, next)
				res.Rebuilt = append(res.Rebuilt, Offset{Bucket: b.Bucket, Offset: next})
				continue
			}
			gone, body, df, name, err := r.Table.cutBucket(ctx, ix, bk, b.Offset, ls)
			if err != nil {
				return RoundResult{}, fmt.Errorf("lake: cut bucket %d of %d at %d: %w", bk.Bucket, bk.PhysicalID, b.Offset, err)
			}
			if body != nil {
				if df, err = r.Table.PutDataFile(ctx, r.Table.DataFileKey(spec, b.Bucket.Partition, name), body, df, b.Bucket.Partition); err != nil {
					return RoundResult{}, err
				}
				files = append(files, df)
				held += df.SizeBytes
			}
			removed = append(removed, gone...)
			res.Cut = append(res.Cut, Offset{Bucket: b.Bucket, Offset: b.Offset})
		}
		if primaryKey {
			df, gone, next, err := r.primaryKeyBucket(ctx, src, ix, b, current, ls, spec, maxBytes-held, &res)
			if err != nil {
				return RoundResult{}, err
			}
			if next != b.Offset {
				replaced(b.Bucket, df, gone, next)
			}
			continue
		}
		var fb *FileBuilder
		read := 0
		next, err := src.ReadBucket(ctx, b.Bucket, b.Offset, max(r.MaxRecords, 1), func(rec Record) error {
			if fb == nil {
				var err error
				if fb, err = NewFileBuilder(current, ls); err != nil {
					return err
				}
			}
			if rec.Batch != nil {
				if _, ok := r.Schemas[rec.SchemaID]; !ok {
					return fmt.Errorf("lake: a batch of schema version %d, which the table does not have", rec.SchemaID)
				}
				read += int(rec.Batch.NumRows())
				if err := fb.AppendBatch(rec.Batch, b.Bucket.Bucket, rec.Offset, rec.TimestampMs); err != nil {
					return err
				}
				if held+fb.Bytes() >= maxBytes {
					res.Full = true
					return ErrRoundFull
				}
				return nil
			}
			read++
			row, err := upgradeRow(r.Schemas, r.CurrentID, current, rec.SchemaID, rec.Row, upgraded[:0])
			if err != nil {
				return err
			}
			if rec.SchemaID != r.CurrentID {
				upgraded = row
			}
			if err := fb.Append(row, b.Bucket.Bucket, rec.Offset, rec.TimestampMs); err != nil {
				return err
			}
			if held+fb.Bytes() >= maxBytes {
				res.Full = true
				return ErrRoundFull
			}
			return nil
		})
		if read >= max(r.MaxRecords, 1) {
			res.Full = true
		}
		if err != nil {
			return RoundResult{}, fmt.Errorf("lake: read bucket %d of %d from %d: %w", b.Bucket.Bucket, b.Bucket.PhysicalID, b.Offset, err)
		}
		if next == b.Offset || fb == nil {
			if len(res.Cut) > 0 && res.Cut[len(res.Cut)-1].Bucket.key() == b.Bucket.key() {
				// Cut, nothing new read: the commit still names the
				// bucket, whose summary offset goes back to the cut.
				res.Offsets = append(res.Offsets, Offset{Bucket: b.Bucket, Offset: b.Offset})
			}
			continue
		}
		body, df, err := fb.Finish()
		if err != nil {
			return RoundResult{}, err
		}
		name := dataFileName(BucketKey{PhysicalID: b.Bucket.PhysicalID, Bucket: b.Bucket.Bucket}, b.Offset, next)
		if df, err = r.Table.PutDataFile(ctx, r.Table.DataFileKey(spec, b.Bucket.Partition, name), body, df, b.Bucket.Partition); err != nil {
			return RoundResult{}, err
		}
		files = append(files, df)
		held += int64(len(body))
		res.Records += df.RecordCount
		res.Offsets = append(res.Offsets, Offset{Bucket: b.Bucket, Offset: next})
	}
	if len(res.Offsets) == 0 {
		return res, nil
	}
	if !primaryKey && ix != nil {
		// Merge a run of each bucket's small files, within the round's
		// bytes.
		for _, b := range r.Buckets {
			if held >= maxBytes {
				break
			}
			bk := BucketKey{PhysicalID: b.Bucket.PhysicalID, Bucket: b.Bucket.Bucket}
			if slices.ContainsFunc(res.Cut, func(o Offset) bool { return o.Bucket.key() == b.Bucket.key() }) {
				continue // its files were just cut; the next round may merge them
			}
			run := smallRun(ix.Files(bk), compactSmallBytes, min(compactMaxBytes, maxBytes-held), compactMinFiles)
			if run == nil {
				continue
			}
			body, df, err := r.Table.compactFiles(ctx, ix, run, ls, noBound)
			if err != nil {
				return RoundResult{}, fmt.Errorf("lake: merge %d files of bucket %d of %d: %w", len(run), bk.Bucket, bk.PhysicalID, err)
			}
			name := dataFileName(bk, run[0].From, run[len(run)-1].Next)
			if df, err = r.Table.PutDataFile(ctx, r.Table.DataFileKey(spec, b.Bucket.Partition, name), body, df, b.Bucket.Partition); err != nil {
				return RoundResult{}, err
			}
			files = append(files, df)
			held += df.SizeBytes
			for _, f := range run {
				removed = append(removed, f.Key)
			}
			res.Compacted += len(run)
			res.Merged++
		}
	}
	version := r.Version
	for attempt := 0; ; attempt++ {
		var expired []Snapshot
		if base != nil {
			expired = base.ExpireSnapshots(r.NowMs, r.Retention)
		}
		offsets, err := mergeOffsets(base, res.Offsets)
		if err != nil {
			return RoundResult{}, err
		}
		summary := map[string]string{SummaryLogOffsets: offsets}
		var staged *Staged
		if primaryKey || len(removed) > 0 {
			staged, err = r.Table.StageReplace(ctx, base, ix, int(version), create, removed, files, summary, r.NowMs)
		} else {
			staged, err = r.Table.StageAppend(ctx, base, int(version), create, files, summary, r.NowMs)
		}
		if err != nil {
			return RoundResult{}, err
		}
		err = commit.Commit(ctx, version, staged.Key, res.Offsets)
		if err == nil {
			res.Version, res.Files, res.MetadataKey = version+1, len(files), staged.Key
			if err := r.Table.Publish(ctx, int(res.Version), staged.Key); err != nil {
				return res, fmt.Errorf("lake: version %d committed, publishing it: %w", res.Version, err)
			}
			res.Expired = len(expired)
			return res, r.Table.deleteManifestLists(ctx, expired)
		}
		if !errors.Is(err, ErrFenced) || r.Reload == nil || attempt >= maxRebases {
			return RoundResult{}, err
		}
		// Another task committed first: the files stand, on top of its
		// version, if the task is still this one's.
		key := ""
		if version, key, err = r.Reload(ctx); err != nil {
			return RoundResult{}, err
		}
		if base, err = r.Table.ReadStaged(ctx, key); err != nil {
			return RoundResult{}, err
		}
		if ix != nil {
			// Another task's buckets moved; the files this round replaces
			// are still this task's, in manifests that may have moved.
			if ix, err = r.Table.IndexOf(ctx, key, base, ix); err != nil {
				return RoundResult{}, err
			}
		}
		lastID := base.LastColumnID
		rebased, err := NewSchema(0, current, base.CurrentSchema(), &lastID)
		if err != nil {
			return RoundResult{}, err
		}
		if len(rebased.Fields) >= len(base.CurrentSchema().Fields) {
			base.SetSchema(rebased, lastID) // never back to an older schema another task moved past
		}
	}
}

// maxRebases bounds the commits of one round's files on top of other
// tasks' versions.
const maxRebases = 8

// mergeOffsets is the base snapshot's floe.log-offsets with moved's.
func mergeOffsets(base *Metadata, moved []Offset) (string, error) {
	all := map[string]int64{}
	if base != nil {
		if cur := base.CurrentSnapshot(); cur != nil {
			var err error
			if all, err = ParseLogOffsets(cur.Summary[SummaryLogOffsets]); err != nil {
				return "", err
			}
		}
	}
	for _, o := range moved {
		all[o.Bucket.key()] = o.Offset
	}
	b, err := json.Marshal(all) // keys sorted: the same offsets read the same
	return string(b), err
}

// ParseLogOffsets reads a snapshot's floe.log-offsets: "physical
// id/bucket" to the offset the lake holds the bucket's records below.
func ParseLogOffsets(s string) (map[string]int64, error) {
	out := map[string]int64{}
	if s == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidMetadata, SummaryLogOffsets, err)
	}
	for k := range out {
		if _, _, ok := strings.Cut(k, "/"); !ok {
			return nil, fmt.Errorf("%w: %s key %q", ErrInvalidMetadata, SummaryLogOffsets, k)
		}
	}
	return out, nil
}

// primaryKeyBucket reads a primary-key table's bucket changelog past its
// lake offset, up to maxBytes of changed rows, and writes the bucket's
// new data file (nil: every row deleted); it returns the files it
// replaces and the offset the bucket's lake goes to (b's own: nothing
// read).
func (r *Round) primaryKeyBucket(ctx context.Context, src Source, ix *Index, b Offset, current record.Schema, ls Schema,
	spec PartitionSpec, maxBytes int64, res *RoundResult) (*DataFile, []string, int64, error) {
	changes, err := newPKChanges(current, r.Schemas)
	if err != nil {
		return nil, nil, 0, err
	}
	read := 0
	next, err := src.ReadBucket(ctx, b.Bucket, b.Offset, max(r.MaxRecords, 1), func(rec Record) error {
		read++
		if err := changes.add(rec, r.CurrentID); err != nil {
			return err
		}
		if changes.bytes >= maxBytes {
			res.Full = true
			return ErrRoundFull
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("lake: read bucket %d of %d from %d: %w", b.Bucket.Bucket, b.Bucket.PhysicalID, b.Offset, err)
	}
	if read >= max(r.MaxRecords, 1) {
		res.Full = true
	}
	if next == b.Offset {
		return nil, nil, next, nil
	}
	var spans []FileSpan
	if ix != nil {
		spans = ix.Files(BucketKey{PhysicalID: b.Bucket.PhysicalID, Bucket: b.Bucket.Bucket})
	}
	body, df, err := r.Table.rewriteBucket(ctx, ix, spans, b.Bucket, changes, ls)
	if err != nil {
		return nil, nil, 0, err
	}
	var gone []string
	for _, s := range spans {
		gone = append(gone, s.Key)
	}
	if body == nil {
		return nil, gone, next, nil
	}
	name := dataFileName(BucketKey{PhysicalID: b.Bucket.PhysicalID, Bucket: b.Bucket.Bucket}, 0, next)
	if df, err = r.Table.PutDataFile(ctx, r.Table.DataFileKey(spec, b.Bucket.Partition, name), body, df, b.Bucket.Partition); err != nil {
		return nil, nil, 0, err
	}
	return &df, gone, next, nil
}
