package tiering

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/floedb/floe/internal/pkgerr"
)

// A KV snapshot is a primary-key bucket's rows as of a log offset, stored
// as a manifest and parts:
//
//	ROOT/t<table>/b<bucket>/kv/parts/<leader epoch>/<sha-256 of the part's rows>.part
//	ROOT/t<table>/b<bucket>/kv/snapshots/<offset, 20 digits>-<leader epoch>-<nonce>.json
//
// The leader epoch in both is the one of the leader that wrote the object
// (parts of builds before it have none: kv/parts/<sha-256>.part), so that
// collection can tell a newer leadership's objects, maybe not committed
// yet, from its own (kvcollect.go).
//
// Rows are cut into parts at content-defined boundaries: after a key whose
// CRC-32C has its low kvPartBits bits zero (about 4,096 rows a part), or at
// kvPartMaxRawBytes. A boundary depends only on the keys, so rows changed
// in one key range change only that range's part, and a part's key is the
// hash of its rows: the next snapshot finds every unchanged part already
// stored and uploads only the changed ones (incremental), while each
// snapshot stays complete on its own (restoring one reads its parts and
// nothing else, and deleted rows need no tombstones).
//
// A part object: "FKVP", a format byte, the row count (uvarint), then one
// zstd frame (with its checksum) of the rows. Under format 2 each row is a
// uvarint key length, the key, the row's schema id (a zigzag varint; -1,
// kvstore.LegacySchemaID, for a row stored without one), a uvarint row
// length, the row. Format 1, written by builds before rows said their
// schema version, lacks the id: its rows restore as legacy rows (of the
// table's first version, the only one those builds wrote). Parts of the
// two formats hash differently, so a snapshot never reuses a format-1 part.

const (
	kvPartMagic = "FKVP"
	// kvPartFormat is the format parts are written in; kvPartFormatV1
	// parts are still read.
	kvPartFormat      = 2
	kvPartFormatV1    = 1
	legacySchemaID    = -1 // kvstore.LegacySchemaID
	kvPartBits        = 12
	kvPartMaxRawBytes = 16 << 20
	// kvManifestFormat is the version of the snapshot manifest encoding.
	kvManifestFormat = 1
	// maxKVPartObjectBytes bounds a part read (a part holds at most
	// kvPartMaxRawBytes of rows plus one row, compressed).
	maxKVPartObjectBytes = 2*kvPartMaxRawBytes + (8 << 20)
)

// ErrBadKVSnapshot: a snapshot manifest or part that does not decode or
// does not match its key.
var ErrBadKVSnapshot = pkgerr.New("tiering", "bad KV snapshot")

// KVManifest lists one KV snapshot's parts, in key order.
type KVManifest struct {
	Format      int      `json:"format"`
	TableID     uint64   `json:"table_id"`
	Bucket      int32    `json:"bucket"`
	Offset      int64    `json:"offset"`
	LeaderEpoch int32    `json:"leader_epoch"`
	CreatedMs   int64    `json:"created_ms"`
	Rows        int64    `json:"rows"`
	RawBytes    int64    `json:"raw_bytes"`
	Bytes       int64    `json:"bytes"`
	Parts       []KVPart `json:"parts"`
}

// KVPart is one part of a snapshot.
type KVPart struct {
	Key      string `json:"key"`
	Rows     int64  `json:"rows"`
	RawBytes int64  `json:"raw_bytes"`
	Bytes    int64  `json:"bytes"`
}

// KVSnapshotConfig says where a bucket's snapshots go.
type KVSnapshotConfig struct {
	Store   ObjectStore
	Root    string // the cluster id
	TableID uint64
	Bucket  int32
	// TempDir holds the parts between reading the store and uploading
	// them, so no read view of the store stays open across uploads.
	TempDir string
}

// KVSource reads a store's rows in key order, each with its schema id, and
// returns the offset they cover, all from one consistent view
// (kvstore.Store.Export).
type KVSource func(fn func(key []byte, schemaID int16, row []byte) error) (appliedOffset int64, err error)

// KVSnapshotResult is a snapshot taken and stored, not yet committed.
type KVSnapshotResult struct {
	ManifestKey   string
	Manifest      *KVManifest
	UploadedBytes int64
	ReusedParts   int
}

func kvPrefix(root string, tableID uint64, bucket int32) string {
	return bucketPrefix(root, tableID, bucket) + "kv/"
}

// kvPartsPrefix is where the leader of leaderEpoch puts parts, ending in "/".
func kvPartsPrefix(root string, tableID uint64, bucket int32, leaderEpoch int32) string {
	return fmt.Sprintf("%sparts/%d/", kvPrefix(root, tableID, bucket), leaderEpoch)
}

func kvManifestKey(root string, tableID uint64, bucket int32, offset int64, leaderEpoch int32, nonce string) string {
	return fmt.Sprintf("%ssnapshots/%020d-%d-%s.json", kvPrefix(root, tableID, bucket), offset, leaderEpoch, nonce)
}

// TakeKVSnapshot reads every row of src into parts, uploads the parts no
// committed snapshot (previous, their manifest keys) already stored, under
// leaderEpoch's prefix, then the manifest, and returns it for the caller
// to commit. A reused part keeps the key it was stored under, whichever
// leader stored it.
func TakeKVSnapshot(ctx context.Context, cfg KVSnapshotConfig, leaderEpoch int32, previous []string, src KVSource) (KVSnapshotResult, error) {
	// known maps a part's rows' hash to the key it is stored under: parts
	// an earlier leader stored keep their key (and epoch) when reused.
	known := map[string]string{}
	for _, key := range previous {
		m, err := ReadKVManifest(ctx, cfg.Store, key)
		if err != nil {
			return KVSnapshotResult{}, err
		}
		for _, p := range m.Parts {
			known[path.Base(p.Key)] = p.Key
		}
	}
	spool, err := os.MkdirTemp(cfg.TempDir, "kv-snapshot-")
	if err != nil {
		return KVSnapshotResult{}, pkgerr.Errorf("tiering", "KV snapshot: %w", err)
	}
	defer os.RemoveAll(spool)
	m := &KVManifest{Format: kvManifestFormat, TableID: cfg.TableID, Bucket: cfg.Bucket, LeaderEpoch: leaderEpoch,
		CreatedMs: time.Now().UnixMilli()}
	w := &partSpool{dir: spool, prefix: kvPartsPrefix(cfg.Root, cfg.TableID, cfg.Bucket, leaderEpoch)}
	defer func() {
		if w.enc != nil {
			w.enc.Close()
		}
	}()
	offset, err := src(func(key []byte, schemaID int16, row []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return w.add(key, schemaID, row)
	})
	if err == nil {
		err = w.cut()
	}
	if err != nil {
		return KVSnapshotResult{}, pkgerr.Errorf("tiering", "KV snapshot of table %d bucket %d: %w", cfg.TableID, cfg.Bucket, err)
	}
	m.Offset = offset
	res := KVSnapshotResult{Manifest: m}
	for i, p := range w.parts {
		if key, ok := known[path.Base(p.Key)]; ok {
			p.Key = key
			res.ReusedParts++
		} else {
			if err := putFile(ctx, cfg.Store, p.Key, p.path, p.Bytes); err != nil {
				return KVSnapshotResult{}, pkgerr.Errorf("tiering", "KV snapshot part %d of table %d bucket %d: %w", i, cfg.TableID, cfg.Bucket, err)
			}
			known[path.Base(p.Key)] = p.Key // the same rows twice in one snapshot go up once
			res.UploadedBytes += p.Bytes
		}
		m.Parts = append(m.Parts, p.KVPart)
		m.Rows += p.Rows
		m.RawBytes += p.RawBytes
		m.Bytes += p.Bytes
	}
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return KVSnapshotResult{}, err
	}
	res.ManifestKey = kvManifestKey(cfg.Root, cfg.TableID, cfg.Bucket, offset, leaderEpoch, nonce())
	if err := cfg.Store.Put(ctx, res.ManifestKey, bytes.NewReader(data), int64(len(data))); err != nil {
		return KVSnapshotResult{}, pkgerr.Errorf("tiering", "KV snapshot manifest: %w", err)
	}
	res.UploadedBytes += int64(len(data))
	return res, nil
}

func putFile(ctx context.Context, store ObjectStore, key, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return store.Put(ctx, key, bufio.NewReader(f), size)
}

// spooledPart is a part written to the spool folder.
type spooledPart struct {
	KVPart
	path string
}

// partSpool cuts rows into parts and writes each, encoded, to a file.
type partSpool struct {
	dir, prefix string
	raw         []byte
	rows        int64
	parts       []spooledPart
	enc         *zstd.Encoder
}

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

func (w *partSpool) add(key []byte, schemaID int16, row []byte) error {
	w.raw = binary.AppendUvarint(w.raw, uint64(len(key)))
	w.raw = append(w.raw, key...)
	w.raw = binary.AppendVarint(w.raw, int64(schemaID))
	w.raw = binary.AppendUvarint(w.raw, uint64(len(row)))
	w.raw = append(w.raw, row...)
	w.rows++
	if crc32.Checksum(key, castagnoliTable)&(1<<kvPartBits-1) == 0 || len(w.raw) >= kvPartMaxRawBytes {
		return w.cut()
	}
	return nil
}

// cut ends the current part, if it has rows.
func (w *partSpool) cut() error {
	if w.rows == 0 {
		return nil
	}
	if w.enc == nil {
		var err error
		if w.enc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true)); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(w.raw)
	obj := append([]byte(kvPartMagic), kvPartFormat)
	obj = binary.AppendUvarint(obj, uint64(w.rows))
	obj = w.enc.EncodeAll(w.raw, obj)
	path := filepath.Join(w.dir, fmt.Sprintf("part-%d", len(w.parts)))
	if err := os.WriteFile(path, obj, 0o600); err != nil {
		return err
	}
	w.parts = append(w.parts, spooledPart{KVPart: KVPart{Key: w.prefix + hex.EncodeToString(sum[:]) + ".part",
		Rows: w.rows, RawBytes: int64(len(w.raw)), Bytes: int64(len(obj))}, path: path})
	w.raw, w.rows = w.raw[:0], 0
	return nil
}

// ReadKVManifest reads and checks a snapshot manifest.
func ReadKVManifest(ctx context.Context, store ObjectStore, key string) (*KVManifest, error) {
	data, err := readAll(ctx, store, key, maxManifestBytes)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "read KV snapshot manifest %s: %w", key, err)
	}
	m := &KVManifest{}
	if json.Unmarshal(data, m) != nil || m.Format != kvManifestFormat {
		return nil, fmt.Errorf("%w: manifest %s does not decode (format %d)", ErrBadKVSnapshot, key, m.Format)
	}
	for _, p := range m.Parts {
		if ValidateKey(p.Key) != nil || p.Rows <= 0 || p.Bytes <= 0 {
			return nil, fmt.Errorf("%w: manifest %s lists a bad part %+v", ErrBadKVSnapshot, key, p)
		}
	}
	return m, nil
}

// KVSink takes a snapshot's rows, each with its schema id (kvstore.Loader).
type KVSink interface {
	Put(key []byte, schemaID int16, row []byte) error
}

// RestoreKVSnapshot reads every part of the snapshot at manifestKey, in
// order, into sink, each part checked against the hash its key names, and
// returns the manifest (its Offset is what the rows cover).
func RestoreKVSnapshot(ctx context.Context, store ObjectStore, manifestKey string, sink KVSink) (*KVManifest, error) {
	m, err := ReadKVManifest(ctx, store, manifestKey)
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(4*kvPartMaxRawBytes))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	var raw []byte
	for _, p := range m.Parts {
		obj, err := readAll(ctx, store, p.Key, maxKVPartObjectBytes)
		if err != nil {
			return nil, pkgerr.Errorf("tiering", "read KV snapshot part %s: %w", p.Key, err)
		}
		var format byte
		if raw, format, err = decodeKVPart(dec, obj, p, raw[:0]); err != nil {
			return nil, err
		}
		for pos := 0; pos < len(raw); {
			r, next, ok := nextKVRecord(raw, pos, format)
			if !ok {
				return nil, fmt.Errorf("%w: part %s: a row cut short at byte %d", ErrBadKVSnapshot, p.Key, pos)
			}
			if err := sink.Put(r.key, r.schemaID, r.row); err != nil {
				return nil, err
			}
			pos = next
		}
	}
	return m, nil
}

// decodeKVPart checks a part object against its manifest entry and the hash
// in its key, and returns its rows' bytes and its format.
func decodeKVPart(dec *zstd.Decoder, obj []byte, p KVPart, dst []byte) ([]byte, byte, error) {
	if len(obj) < len(kvPartMagic)+2 || string(obj[:len(kvPartMagic)]) != kvPartMagic {
		return nil, 0, fmt.Errorf("%w: part %s: bad header", ErrBadKVSnapshot, p.Key)
	}
	format := obj[len(kvPartMagic)]
	if format != kvPartFormat && format != kvPartFormatV1 {
		return nil, 0, fmt.Errorf("%w: part %s: format %d", ErrBadKVSnapshot, p.Key, format)
	}
	rows, n := binary.Uvarint(obj[len(kvPartMagic)+1:])
	if n <= 0 || int64(rows) != p.Rows {
		return nil, 0, fmt.Errorf("%w: part %s: %d rows, the manifest says %d", ErrBadKVSnapshot, p.Key, rows, p.Rows)
	}
	raw, err := dec.DecodeAll(obj[len(kvPartMagic)+1+n:], dst)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: part %s: %v", ErrBadKVSnapshot, p.Key, err)
	}
	sum := sha256.Sum256(raw)
	if !strings.HasSuffix(p.Key, "/"+hex.EncodeToString(sum[:])+".part") {
		return nil, 0, fmt.Errorf("%w: part %s: its rows hash to %x", ErrBadKVSnapshot, p.Key, sum)
	}
	return raw, format, nil
}

// kvRecord is one row of a part.
type kvRecord struct {
	key, row []byte
	schemaID int16
}

// nextKVRecord reads the record at pos of a part's rows in format.
func nextKVRecord(raw []byte, pos int, format byte) (r kvRecord, next int, ok bool) {
	kl, n := binary.Uvarint(raw[pos:])
	if n <= 0 || uint64(len(raw)-pos-n) < kl {
		return kvRecord{}, 0, false
	}
	pos += n
	r.key, pos = raw[pos:pos+int(kl)], pos+int(kl)
	r.schemaID = legacySchemaID
	if format != kvPartFormatV1 {
		id, n := binary.Varint(raw[pos:])
		if n <= 0 || id < math.MinInt16 || id > math.MaxInt16 {
			return kvRecord{}, 0, false
		}
		r.schemaID, pos = int16(id), pos+n
	}
	rl, n := binary.Uvarint(raw[pos:])
	if n <= 0 || uint64(len(raw)-pos-n) < rl {
		return kvRecord{}, 0, false
	}
	pos += n
	r.row = raw[pos : pos+int(rl)]
	return r, pos + int(rl), true
}

// readAll reads a whole object of at most limit bytes.
func readAll(ctx context.Context, store ObjectStore, key string, limit int64) ([]byte, error) {
	body, err := store.Get(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes", key, limit)
	}
	return data, nil
}
