package tiering

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// memRows is a store's rows for snapshot tests: a KVSource over a map.
type memRows struct {
	rows   map[string]string
	offset int64
}

func (m *memRows) source() KVSource {
	return func(fn func(key []byte, schemaID int16, row []byte) error) (int64, error) {
		for _, k := range slices.Sorted(maps.Keys(m.rows)) {
			if err := fn([]byte(k), testSchemaID(k), []byte(m.rows[k])); err != nil {
				return 0, err
			}
		}
		return m.offset, nil
	}
}

// testSchemaID is the schema id memRows gives the row of key: legacy
// (-1) and versions 1 and 2 by turns.
func testSchemaID(key string) int16 { return int16(len(key)%3) - 1 }

// sinkRows is a KVSink into a map that checks each row's schema id is the
// one memRows gave it.
type sinkRows map[string]string

func (s sinkRows) Put(key []byte, schemaID int16, row []byte) error {
	if _, dup := s[string(key)]; dup {
		return fmt.Errorf("row %q twice", key)
	}
	if want := testSchemaID(string(key)); schemaID != want {
		return fmt.Errorf("row %q restored with schema id %d, taken with %d", key, schemaID, want)
	}
	s[string(key)] = string(row)
	return nil
}

func snapConfig(t *testing.T) KVSnapshotConfig {
	store, err := NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return KVSnapshotConfig{Store: store, Root: "c1", TableID: 4, Bucket: 1, TempDir: t.TempDir()}
}

// TestKVSnapshotRoundTrip: a restore gives exactly the rows and offset
// taken; the next snapshot after a small change uploads only the parts
// whose key range changed, and still restores whole.
func TestKVSnapshotRoundTrip(t *testing.T) {
	cfg := snapConfig(t)
	ctx := t.Context()
	src := &memRows{rows: map[string]string{}, offset: 5000}
	for i := range 50_000 {
		src.rows[fmt.Sprintf("key-%07d", i)] = strings.Repeat(fmt.Sprint(i%10), 40)
	}
	first, err := TakeKVSnapshot(ctx, cfg, 3, nil, src.source())
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Manifest.Parts) < 5 || first.Manifest.Rows != 50_000 || first.Manifest.Offset != 5000 {
		t.Fatalf("first snapshot: %d parts, %d rows at %d", len(first.Manifest.Parts), first.Manifest.Rows, first.Manifest.Offset)
	}
	got := sinkRows{}
	m, err := RestoreKVSnapshot(ctx, cfg.Store, first.ManifestKey, got)
	if err != nil || m.Offset != 5000 || !maps.Equal(map[string]string(got), src.rows) {
		t.Fatalf("restore: %d rows at %v, %v; want %d", len(got), m, err, len(src.rows))
	}

	// Change one row, delete one, add one: a few parts change.
	src.rows["key-0000100"] = "changed"
	delete(src.rows, "key-0040000")
	src.rows["key-0020000x"] = "new"
	src.offset = 6000
	second, err := TakeKVSnapshot(ctx, cfg, 3, []string{first.ManifestKey}, src.source())
	if err != nil {
		t.Fatal(err)
	}
	parts := len(second.Manifest.Parts)
	if changed := parts - second.ReusedParts; changed < 1 || changed > 3 {
		t.Fatalf("%d of %d parts uploaded again after 3 row changes; want 1 to 3", changed, parts)
	}
	if second.UploadedBytes >= first.UploadedBytes/2 {
		t.Fatalf("second snapshot uploaded %d bytes, the first %d: not incremental", second.UploadedBytes, first.UploadedBytes)
	}
	got = sinkRows{}
	if _, err := RestoreKVSnapshot(ctx, cfg.Store, second.ManifestKey, got); err != nil || !maps.Equal(map[string]string(got), src.rows) {
		t.Fatalf("second restore: %d rows, %v", len(got), err)
	}

	// Collecting with only the second retained keeps it restorable and
	// deletes the parts only the first used.
	n, err := CollectKVSnapshots(ctx, cfg, 3, []string{second.ManifestKey})
	if err != nil || n == 0 {
		t.Fatalf("collected %d objects: %v", n, err)
	}
	if _, err := ReadKVManifest(ctx, cfg.Store, first.ManifestKey); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the dropped snapshot's manifest is still there: %v", err)
	}
	got = sinkRows{}
	if _, err := RestoreKVSnapshot(ctx, cfg.Store, second.ManifestKey, got); err != nil || len(got) != len(src.rows) {
		t.Fatalf("restore after collect: %d rows, %v", len(got), err)
	}
}

// TestKVSnapshotDamageDetected: a part whose bytes changed in the store is
// refused, not restored.
func TestKVSnapshotDamageDetected(t *testing.T) {
	cfg := snapConfig(t)
	ctx := t.Context()
	src := &memRows{rows: map[string]string{"a": "1", "b": "2", "c": "3"}, offset: 10}
	res, err := TakeKVSnapshot(ctx, cfg, 1, nil, src.source())
	if err != nil {
		t.Fatal(err)
	}
	part := res.Manifest.Parts[0]
	obj, err := readAll(ctx, cfg.Store, part.Key, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	obj[len(obj)-5] ^= 0x40
	if err := cfg.Store.Put(ctx, part.Key, strings.NewReader(string(obj)), int64(len(obj))); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreKVSnapshot(ctx, cfg.Store, res.ManifestKey, sinkRows{}); !errors.Is(err, ErrBadKVSnapshot) {
		t.Fatalf("restore of a damaged part: %v; want ErrBadKVSnapshot", err)
	}
}

// TestKVSnapshotEmptyStore: a store with no rows snapshots to a manifest
// without parts, restored as nothing at its offset.
func TestKVSnapshotEmptyStore(t *testing.T) {
	cfg := snapConfig(t)
	res, err := TakeKVSnapshot(t.Context(), cfg, 1, nil, (&memRows{rows: map[string]string{}, offset: 7}).source())
	if err != nil {
		t.Fatal(err)
	}
	m, err := RestoreKVSnapshot(context.Background(), cfg.Store, res.ManifestKey, sinkRows{})
	if err != nil || m.Offset != 7 || len(m.Parts) != 0 {
		t.Fatalf("restore: %+v, %v", m, err)
	}
}

// TestKVSnapshotFormat1Parts: a snapshot whose parts an earlier build
// wrote (format 1, rows without schema ids) restores every row as a legacy
// row, and a part of a format this build does not know is refused.
func TestKVSnapshotFormat1Parts(t *testing.T) {
	cfg := snapConfig(t)
	ctx := t.Context()
	rows := map[string]string{"a": "row a", "b": "row b"}
	var raw []byte
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		raw = binary.AppendUvarint(raw, uint64(len(k)))
		raw = append(raw, k...)
		raw = binary.AppendUvarint(raw, uint64(len(rows[k])))
		raw = append(raw, rows[k]...)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	put := func(format byte) string {
		obj := binary.AppendUvarint(append([]byte(kvPartMagic), format), uint64(len(rows)))
		obj = enc.EncodeAll(raw, obj)
		sum := sha256.Sum256(raw)
		// One folder per format: both parts' rows hash alike.
		partKey := kvPartsPrefix(cfg.Root, cfg.TableID, cfg.Bucket, int32(format)) + hex.EncodeToString(sum[:]) + ".part"
		m := KVManifest{Format: kvManifestFormat, TableID: cfg.TableID, Bucket: cfg.Bucket, Offset: 42, LeaderEpoch: 1,
			Rows: int64(len(rows)), Parts: []KVPart{{Key: partKey, Rows: int64(len(rows)), RawBytes: int64(len(raw)), Bytes: int64(len(obj))}}}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		manifestKey := kvManifestKey(cfg.Root, cfg.TableID, cfg.Bucket, 42, 1, fmt.Sprint(format))
		for key, body := range map[string][]byte{partKey: obj, manifestKey: data} {
			if err := cfg.Store.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
		}
		return manifestKey
	}
	got := legacyRows{}
	m, err := RestoreKVSnapshot(ctx, cfg.Store, put(kvPartFormatV1), got)
	if err != nil || m.Offset != 42 || !maps.Equal(map[string]string(got), rows) {
		t.Fatalf("restore of format-1 parts: %v, %v; want %v", got, err, rows)
	}
	if _, err := RestoreKVSnapshot(ctx, cfg.Store, put(7), legacyRows{}); !errors.Is(err, ErrBadKVSnapshot) {
		t.Fatalf("restore of a format-7 part: %v; want ErrBadKVSnapshot", err)
	}
}

// legacyRows is a KVSink that takes legacy rows only.
type legacyRows map[string]string

func (s legacyRows) Put(key []byte, schemaID int16, row []byte) error {
	if schemaID != legacySchemaID {
		return fmt.Errorf("row %q restored with schema id %d, want the legacy %d", key, schemaID, legacySchemaID)
	}
	s[string(key)] = string(row)
	return nil
}
