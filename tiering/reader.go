package tiering

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// ErrNotRemote: the offset is not in the committed remote log.
var ErrNotRemote = pkgerr.New("tiering", "offset not in the remote log")

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	// Store holds the remote logs. Required.
	Store ObjectStore
	// CacheBytes bounds the decoded manifests and segment indexes kept.
	// Default 64 MiB.
	CacheBytes int64
	// PresignExpiry is how long a presigned URL reads. Default 15 min.
	PresignExpiry time.Duration
}

// Defaults of ReaderConfig.
const (
	DefaultReaderCacheBytes = 64 << 20
	DefaultPresignExpiry    = 15 * time.Minute
)

// Reader reads committed remote logs: it finds the segment and position
// of an offset or a timestamp, reads whole batches from there, or hands
// out a URL for a client to read them itself. Safe for concurrent use.
type Reader struct {
	cfg   ReaderConfig
	cache *objectCache
}

// NewReader returns a Reader over cfg.Store.
func NewReader(cfg ReaderConfig) (*Reader, error) {
	if cfg.Store == nil {
		return nil, pkgerr.New("tiering", "reader config: Store is required")
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = DefaultReaderCacheBytes
	}
	if cfg.PresignExpiry <= 0 {
		cfg.PresignExpiry = DefaultPresignExpiry
	}
	return &Reader{cfg: cfg, cache: newObjectCache(cfg.CacheBytes)}, nil
}

// Location is a place in a remote segment: reading its batches from
// Position on reaches the offset it was located for.
type Location struct {
	Segment  RemoteSegment
	Position int64
}

// Manifest returns the committed manifest h names.
func (r *Reader) Manifest(ctx context.Context, h Handle) (*Manifest, error) {
	if h.ManifestKey == "" {
		return &Manifest{Format: ManifestFormat}, nil
	}
	if m, ok := r.cache.get(h.ManifestKey); ok {
		return m.(*Manifest), nil
	}
	data, err := r.readObject(ctx, h.ManifestKey, maxManifestBytes)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "read manifest: %w", err)
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.ManifestKey, err)
	}
	r.cache.put(h.ManifestKey, m, int64(len(data)))
	return m, nil
}

// Locate finds the remote segment of h holding offset and the position to
// read it from. An offset outside [h.StartOffset, h.EndOffset) is
// ErrNotRemote.
func (r *Reader) Locate(ctx context.Context, h Handle, offset int64) (Location, error) {
	if offset < h.StartOffset || offset >= h.EndOffset {
		return Location{}, fmt.Errorf("%w: offset %d, remote log holds [%d, %d)", ErrNotRemote, offset, h.StartOffset, h.EndOffset)
	}
	m, err := r.Manifest(ctx, h)
	if err != nil {
		return Location{}, err
	}
	seg, ok := m.Find(offset)
	if !ok {
		return Location{}, fmt.Errorf("%w: offset %d is in no segment of %s", ErrBadManifest, offset, h.ManifestKey)
	}
	ix, err := r.index(ctx, seg)
	if err != nil {
		return Location{}, err
	}
	return Location{Segment: seg, Position: ix.PositionFor(offset)}, nil
}

// index returns a segment's decoded index.
func (r *Reader) index(ctx context.Context, seg RemoteSegment) (*logstore.SegmentIndex, error) {
	if ix, ok := r.cache.get(seg.IndexKey); ok {
		return ix.(*logstore.SegmentIndex), nil
	}
	data, err := r.readObject(ctx, seg.IndexKey, maxIndexBytes)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "read segment index: %w", err)
	}
	ix, err := logstore.DecodeSegmentIndex(seg.BaseOffset, seg.objectBytes(), data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", seg.IndexKey, err)
	}
	r.cache.put(seg.IndexKey, ix, int64(len(data)))
	return ix, nil
}

// maxIndexBytes bounds a segment index read (a 1 GiB segment indexed
// every 4 KiB takes 5 MiB).
const maxIndexBytes = 32 << 20

// readObject reads a whole small object, at most limit bytes.
func (r *Reader) readObject(ctx context.Context, key string, limit int64) ([]byte, error) {
	return readAll(ctx, r.cfg.Store, key, limit)
}

// ReadBatches reads whole batches of loc's segment from loc.Position on:
// about maxBytes, at least one batch however large, never past the
// segment's end. Each batch's CRC is checked: damage in the remote copy
// is record.ErrCorruptBatch, never served.
func (r *Reader) ReadBatches(ctx context.Context, loc Location, maxBytes int) ([]byte, error) {
	seg := loc.Segment
	left := seg.Bytes - loc.Position
	if left <= 0 {
		return nil, nil
	}
	n := min(int64(max(maxBytes, record.HeaderSize)), left)
	data, err := r.readRange(ctx, seg.DataKey, loc.Position, n)
	if err != nil {
		return nil, err
	}
	whole, partial := record.WholeBatches(data)
	if whole == 0 && partial > 0 && int64(partial) <= left {
		// The first batch is larger than maxBytes: read it whole.
		if data, err = r.readRange(ctx, seg.DataKey, loc.Position, int64(partial)); err != nil {
			return nil, err
		}
		whole, _ = record.WholeBatches(data)
	}
	if whole == 0 {
		return nil, fmt.Errorf("%w: no whole batch at byte %d of %s", record.ErrCorruptBatch, loc.Position, seg.DataKey)
	}
	data = data[:whole]
	it := record.NewBatchIterator(data, true)
	if err := drain(&it); err != nil {
		return nil, fmt.Errorf("%s at byte %d: %w", seg.DataKey, loc.Position, err)
	}
	return data, nil
}

// ReadBatchesFrom reads whole batches from the one holding offset on: about
// maxBytes, at least that batch however large. loc is Locate's for offset;
// its position comes from a sparse index, so the batches before offset
// that it starts at are read past, never returned: a reader whose budget
// holds one batch still moves forward.
func (r *Reader) ReadBatchesFrom(ctx context.Context, loc Location, offset int64, maxBytes int) ([]byte, error) {
	for {
		data, err := r.ReadBatches(ctx, loc, maxBytes)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("%w: %s ends at byte %d, before offset %d", ErrBadManifest, loc.Segment.DataKey, loc.Position, offset)
		}
		if skip := batchesBefore(data, offset); skip < len(data) {
			return data[skip:], nil
		}
		loc.Position += int64(len(data))
	}
}

// batchesBefore is the length of data's leading whole batches that end at
// or before offset.
func batchesBefore(data []byte, offset int64) int {
	skip := 0
	for it := record.NewBatchIterator(data, false); it.Next(); {
		if it.Batch().NextOffset() > offset {
			break
		}
		skip = it.Pos()
	}
	return skip
}

// drain runs the iterator to its end and returns its error.
func drain(it *record.BatchIterator) error {
	for it.Next() {
	}
	return it.Err()
}

// readRange reads n bytes of key from offset, exactly.
func (r *Reader) readRange(ctx context.Context, key string, offset, n int64) ([]byte, error) {
	body, err := r.cfg.Store.Get(ctx, key, offset, n)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "read %s: %w", key, err)
	}
	defer body.Close()
	data := make([]byte, n)
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, pkgerr.Errorf("tiering", "read %s [%d, +%d): %w", key, offset, n, err)
	}
	return data, nil
}

// Presign returns a URL that reads loc's segment with HTTP range requests,
// or ErrNoPresign when the store has none.
func (r *Reader) Presign(ctx context.Context, loc Location) (string, error) {
	return r.cfg.Store.PresignGet(ctx, loc.Segment.DataKey, r.cfg.PresignExpiry)
}

// OffsetForTimestamp finds the first offset of h whose batch has a commit
// timestamp of at least ts (ms); ok is false when every remote batch is
// older.
func (r *Reader) OffsetForTimestamp(ctx context.Context, h Handle, ts int64) (offset int64, ok bool, err error) {
	m, err := r.Manifest(ctx, h)
	if err != nil {
		return 0, false, err
	}
	seg, found := m.FindTime(ts)
	if !found {
		return 0, false, nil
	}
	ix, err := r.index(ctx, seg)
	if err != nil {
		return 0, false, err
	}
	loc := Location{Segment: seg, Position: ix.PositionForTime(ts)}
	for loc.Position < seg.Bytes {
		data, err := r.ReadBatches(ctx, loc, 1<<20)
		if err != nil {
			return 0, false, err
		}
		for it := record.NewBatchIterator(data, false); it.Next(); {
			if b := it.Batch(); b.CommitTimestamp() >= ts {
				return max(b.BaseOffset(), h.StartOffset), true, nil
			}
		}
		loc.Position += int64(len(data))
	}
	// The segment's max timestamp said a batch is there: its index lied.
	return 0, false, fmt.Errorf("%w: %s has no batch at or after %d ms, its manifest entry says it does", ErrBadManifest, seg.DataKey, ts)
}
