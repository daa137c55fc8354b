package lake

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/floedb/floe/tiering"
)

// Table is one lake table's files in an object store, under its key
// prefix (docs/lake.md has the layout):
//
//	<prefix>/metadata/v<N>.metadata.json    the committed versions
//	<prefix>/metadata/version-hint.text     N, for readers by path
//	<prefix>/metadata/<uuid>.metadata.json  a version staged for commit
//	<prefix>/metadata/snap-<id>-<uuid>.avro a snapshot's manifest list
//	<prefix>/metadata/<uuid>-m0.avro        a manifest
//	<prefix>/data/<partition>/<name>.parquet
type Table struct {
	store  tiering.ObjectStore
	prefix string
}

// NewTable is the lake table under prefix in store.
func NewTable(store tiering.ObjectStore, prefix string) *Table {
	return &Table{store: store, prefix: strings.Trim(prefix, "/")}
}

// Location is the URI engines find the table at (the metadata's
// location): the store's, then the prefix.
func (t *Table) Location() string { return t.uri(t.prefix) }

// VersionURI is where engines find version n's metadata file by path
// (once published).
func (t *Table) VersionURI(n int) string { return t.uri(t.VersionFile(n)) }

// uri is where an engine finds the object under key.
func (t *Table) uri(key string) string { return strings.TrimSuffix(t.store.String(), "/") + "/" + key }

// key is the object key of a URI of this table; false for a URI elsewhere.
func (t *Table) key(uri string) (string, bool) {
	base := strings.TrimSuffix(t.store.String(), "/") + "/"
	return strings.CutPrefix(uri, base)
}

func (t *Table) metadataKey(name string) string { return t.prefix + "/metadata/" + name }

// VersionFile is the key of committed version n's metadata file.
func (t *Table) VersionFile(n int) string {
	return t.metadataKey("v" + strconv.Itoa(n) + ".metadata.json")
}

// DataFileKey is the key of a new data file of a partition (its path
// values, escaped; "" when unpartitioned), named by what it holds
// (name: say, the bucket and offsets) and a unique suffix, so a task
// redone never overwrites a file an earlier attempt may have committed.
func (t *Table) DataFileKey(spec PartitionSpec, values []PartitionValue, name string) string {
	var b strings.Builder
	b.WriteString(t.prefix)
	b.WriteString("/data/")
	for i, f := range spec.Fields {
		b.WriteString(escapePathPart(f.Name))
		b.WriteByte('=')
		if i < len(values) {
			b.WriteString(escapePathPart(partitionString(values[i])))
		}
		b.WriteByte('/')
	}
	b.WriteString(name)
	b.WriteByte('-')
	b.WriteString(uuid.NewString())
	b.WriteString(".parquet")
	return b.String()
}

// PutDataFile stores a written data file under key and returns it as a
// manifest describes it.
func (t *Table) PutDataFile(ctx context.Context, key string, body []byte, f DataFile, partition []PartitionValue) (DataFile, error) {
	if err := t.store.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		return DataFile{}, fmt.Errorf("lake: put %s: %w", key, err)
	}
	f.Path, f.Partition, f.SizeBytes = t.uri(key), partition, int64(len(body))
	return f, nil
}

// Staged is a new version written beside the committed ones, waiting for
// the commit that makes it current.
type Staged struct {
	Metadata *Metadata
	Key      string // the staged metadata file's key
}

// StageAppend writes a snapshot adding files to base (the committed
// version, baseVersion; nil and 0 for a table with none; base is changed
// into the new version's metadata) with schema current, and the metadata file of the version after it, under a unique
// name: nothing a reader follows changes until Publish. The new
// snapshot's manifest list keeps base's manifests and adds one of files.
func (t *Table) StageAppend(ctx context.Context, base *Metadata, baseVersion int, create func() (*Metadata, error),
	files []DataFile, summary map[string]string, nowMs int64) (*Staged, error) {
	m, err := t.next(base, create)
	if err != nil {
		return nil, err
	}
	var kept []ManifestFile
	if cur := m.CurrentSnapshot(); cur != nil {
		if kept, err = t.ReadManifestList(ctx, cur.ManifestList); err != nil {
			return nil, err
		}
	}
	snapID := newSnapshotID()
	seq := m.LastSequenceNumber + 1
	manifests := kept
	if len(files) > 0 {
		mf, err := t.putManifest(ctx, m, snapID, seq, files)
		if err != nil {
			return nil, err
		}
		manifests = append(manifests, mf)
	}
	var addedRows int64
	for _, f := range files {
		addedRows += f.RecordCount
	}
	sum := map[string]string{"operation": "append", "added-data-files": strconv.Itoa(len(files)),
		"added-records": strconv.FormatInt(addedRows, 10)}
	for k, v := range summary {
		sum[k] = v
	}
	return t.stage(ctx, m, baseVersion, snapID, seq, manifests, sum, nowMs)
}

// next is the metadata the next version starts from: base itself, which
// the caller gives up (a round reads its base anew for each commit it
// tries), or a new table's. It used to copy base by writing and parsing
// it again, which cost a round as much as all its other metadata work.
func (t *Table) next(base *Metadata, create func() (*Metadata, error)) (*Metadata, error) {
	if base == nil {
		return create()
	}
	return base, nil
}

// stage writes the manifest list and the metadata file of the new
// snapshot.
func (t *Table) stage(ctx context.Context, m *Metadata, baseVersion int, snapID, seq int64, manifests []ManifestFile,
	summary map[string]string, nowMs int64) (*Staged, error) {
	list, err := WriteManifestList(snapID, m.CurrentSnapshotID, seq, manifests)
	if err != nil {
		return nil, err
	}
	listKey := t.metadataKey(fmt.Sprintf("snap-%d-%s.avro", snapID, uuid.NewString()))
	if err := t.store.Put(ctx, listKey, bytes.NewReader(list), int64(len(list))); err != nil {
		return nil, fmt.Errorf("lake: put %s: %w", listKey, err)
	}
	prevFile := ""
	if baseVersion > 0 {
		prevFile = t.uri(t.VersionFile(baseVersion))
	}
	m.AddSnapshot(Snapshot{ID: snapID, TimestampMs: nowMs, ManifestList: t.uri(listKey), Summary: summary}, prevFile)
	if m.LastSequenceNumber != seq {
		return nil, fmt.Errorf("lake: snapshot sequence %d, metadata says %d", seq, m.LastSequenceNumber)
	}
	body, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	key := t.metadataKey(uuid.NewString() + ".metadata.json")
	if err := t.store.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		return nil, fmt.Errorf("lake: put %s: %w", key, err)
	}
	return &Staged{Metadata: m, Key: key}, nil
}

// putManifest writes a manifest of files added by snapshot snapID.
func (t *Table) putManifest(ctx context.Context, m *Metadata, snapID, seq int64, files []DataFile) (ManifestFile, error) {
	types, err := m.specTypes(m.Spec())
	if err != nil {
		return ManifestFile{}, err
	}
	entries := make([]ManifestEntry, len(files))
	for i, f := range files {
		entries[i] = ManifestEntry{Status: statusAdded, SnapshotID: snapID, File: f}
	}
	return t.putEntries(ctx, m, snapID, seq, types, entries)
}

// putEntries writes a manifest of snapshot snapID (sequence seq) holding
// entries: files it adds, and files of earlier snapshots it keeps
// (EXISTING) or deletes (DELETED), with their own sequence numbers.
func (t *Table) putEntries(ctx context.Context, m *Metadata, snapID, seq int64, types []string, entries []ManifestEntry) (ManifestFile, error) {
	spec := m.Spec()
	mf := ManifestFile{SpecID: spec.ID, SequenceNumber: seq, MinSequenceNumber: seq, AddedSnapshotID: snapID}
	var files []DataFile
	for _, e := range entries {
		switch e.Status {
		case statusAdded:
			mf.Added++
			mf.AddedRows += e.File.RecordCount
		case statusExisting:
			mf.Existing++
			mf.ExistingRows += e.File.RecordCount
		case statusDeleted:
			mf.Deleted++
			mf.DeletedRows += e.File.RecordCount
		}
		if e.Status == statusExisting && e.SequenceNumber < mf.MinSequenceNumber {
			mf.MinSequenceNumber = e.SequenceNumber
		}
		files = append(files, e.File)
	}
	mf.Partitions = summarize(types, files)
	body, err := WriteManifest(ManifestMeta{Schema: *m.CurrentSchema(), Spec: spec, SpecTypes: types, SnapshotID: snapID}, entries)
	if err != nil {
		return ManifestFile{}, err
	}
	key := t.metadataKey(uuid.NewString() + "-m0.avro")
	if err := t.store.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		return ManifestFile{}, fmt.Errorf("lake: put %s: %w", key, err)
	}
	mf.Path, mf.Length = t.uri(key), int64(len(body))
	return mf, nil
}

// specTypes are the Iceberg types of the spec's fields (their source
// columns').
func (m *Metadata) specTypes(spec PartitionSpec) ([]string, error) {
	s := m.CurrentSchema()
	types := make([]string, len(spec.Fields))
	for i, pf := range spec.Fields {
		found := false
		for _, f := range s.Fields {
			if f.ID == pf.SourceID {
				types[i], found = f.Type.Primitive, true
			}
		}
		if !found || types[i] == "" {
			return nil, fmt.Errorf("%w: partition field %s has no primitive source column", ErrInvalidMetadata, pf.Name)
		}
	}
	return types, nil
}

// Publish makes a committed version readable by path: its metadata file
// as v<version>.metadata.json, then version-hint.text. It is idempotent
// (a task redone after a crash publishes again), and only a version the
// controller committed is ever published, so two committers never write
// one name.
func (t *Table) Publish(ctx context.Context, version int, stagedKey string) error {
	body, err := t.read(ctx, stagedKey, maxMetadataBytes)
	if err != nil {
		return err
	}
	vkey := t.VersionFile(version)
	if err := t.store.Put(ctx, vkey, bytes.NewReader(body), int64(len(body))); err != nil {
		return fmt.Errorf("lake: put %s: %w", vkey, err)
	}
	if published, err := t.publishedVersion(ctx); err != nil {
		return err
	} else if published >= version {
		return nil // a later version is published already: the hint never goes back
	}
	hint := []byte(strconv.Itoa(version))
	if err := t.store.Put(ctx, t.metadataKey("version-hint.text"), bytes.NewReader(hint), int64(len(hint))); err != nil {
		return fmt.Errorf("lake: put version hint: %w", err)
	}
	return nil
}

// EnsurePublished publishes the committed version (its staged metadata
// file stagedKey) unless version-hint.text names it or a later one: a
// round whose publish failed after its commit (the store unreachable a
// moment) left the version readable by the cluster but not by path, and
// a quiet table commits no later version that would publish over it. It
// says whether it published.
func (t *Table) EnsurePublished(ctx context.Context, version int, stagedKey string) (bool, error) {
	published, err := t.publishedVersion(ctx)
	if err != nil || published >= version {
		return false, err
	}
	return true, t.Publish(ctx, version, stagedKey)
}

// publishedVersion is what version-hint.text names; 0 when there is none.
func (t *Table) publishedVersion(ctx context.Context) (int, error) {
	hint, err := t.read(ctx, t.metadataKey("version-hint.text"), 64)
	if errors.Is(err, tiering.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hint)))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: version-hint.text says %q", ErrInvalidMetadata, hint)
	}
	return n, nil
}

// maxMetadataBytes bounds a metadata file Floe reads back.
const maxMetadataBytes = 64 << 20

// ReadVersion reads committed version n's metadata.
func (t *Table) ReadVersion(ctx context.Context, n int) (*Metadata, error) {
	return t.readMetadata(ctx, t.VersionFile(n))
}

// ReadStaged reads a staged metadata file.
func (t *Table) ReadStaged(ctx context.Context, key string) (*Metadata, error) {
	return t.readMetadata(ctx, key)
}

func (t *Table) readMetadata(ctx context.Context, key string) (*Metadata, error) {
	body, err := t.read(ctx, key, maxMetadataBytes)
	if err != nil {
		return nil, err
	}
	return ParseMetadata(body)
}

// read reads a whole object of at most limit bytes.
func (t *Table) read(ctx context.Context, key string, limit int64) ([]byte, error) {
	rc, err := t.store.Get(ctx, key, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("lake: read %s: %w", key, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("lake: read %s: %w", key, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrInvalidMetadata, key, limit)
	}
	return body, nil
}

// readURI reads an object of this table by the URI metadata names it by.
func (t *Table) readURI(ctx context.Context, uri string, limit int64) ([]byte, error) {
	key, ok := t.key(uri)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not in %s", ErrInvalidMetadata, uri, t.store)
	}
	return t.read(ctx, key, limit)
}

// newSnapshotID is a random positive 63-bit id, as Iceberg writers pick
// them.
func newSnapshotID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := int64(binary.LittleEndian.Uint64(b[:]) >> 1)
	if id == 0 {
		id = 1
	}
	return id
}

// escapePathPart keeps [A-Za-z0-9._-] and percent-encodes every other
// byte: object keys are printable ASCII, and engines read a partition
// directory's name as a URL path part.
func escapePathPart(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ReadCurrent reads the version readers by path find, by
// version-hint.text, and its metadata; ErrNotFound (tiering's) before the
// first version is published.
func (t *Table) ReadCurrent(ctx context.Context) (*Metadata, int, error) {
	hint, err := t.read(ctx, t.metadataKey("version-hint.text"), 64)
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hint)))
	if err != nil || n < 1 {
		return nil, 0, fmt.Errorf("%w: version-hint.text says %q", ErrInvalidMetadata, hint)
	}
	m, err := t.ReadVersion(ctx, n)
	return m, n, err
}

// Rows counts the rows of the current snapshot's data files, by their
// manifests.
func (t *Table) Rows(ctx context.Context, m *Metadata) (int64, error) {
	cur := m.CurrentSnapshot()
	if cur == nil {
		return 0, nil
	}
	manifests, err := t.ReadManifestList(ctx, cur.ManifestList)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, mf := range manifests {
		n += mf.AddedRows + mf.ExistingRows
	}
	return n, nil
}

// deleteManifestLists deletes the manifest lists of expired snapshots.
// Their manifests stay: a log table's later snapshots list them too.
func (t *Table) deleteManifestLists(ctx context.Context, expired []Snapshot) error {
	var keys []string
	for _, s := range expired {
		if key, ok := t.key(s.ManifestList); ok {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := t.store.Delete(ctx, keys...); err != nil {
		return fmt.Errorf("lake: delete the manifest lists of %d expired snapshots: %w", len(keys), err)
	}
	return nil
}
