package tiering

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// Handle is a bucket's committed remote log as the metadata holds it
// (pb.RemoteLog): which manifest is current, and what it holds. The zero
// Handle is a bucket that has uploaded nothing.
type Handle struct {
	ManifestKey string
	StartOffset int64
	EndOffset   int64
	// RunStart is where the newest gap-free run of segments starts
	// (Manifest.RunStart); 0 from metadata stored before it was kept,
	// which then means StartOffset (see CoveredFrom).
	RunStart     int64
	Version      int64
	Segments     int32
	Bytes        int64
	MaxTimestamp int64
}

// CoveredFrom is where the remote log holds every offset up to its end:
// the newest gap-free run's start. Local retention deletes only segments
// in [CoveredFrom, EndOffset), and a follower catching up from remote
// storage reads from there.
func (h Handle) CoveredFrom() int64 { return max(h.StartOffset, h.RunStart) }

// LeaderBucket is a bucket this node leads, as one tiering round sees it.
type LeaderBucket struct {
	TableID uint64
	Bucket  int32
	// Log is the replica's log; LeaderEpoch its leader epoch and
	// HighWatermark its high watermark when the round started. Only
	// segments wholly below the high watermark are uploaded: every
	// in-sync replica holds them, and no leader change can undo them.
	Log           *logstore.Log
	LeaderEpoch   int32
	HighWatermark int64
	// Committed is the remote log the metadata holds for the bucket.
	Committed Handle
	// TTL drops remote segments whose newest batch is older (0: never);
	// only segments wholly below ExpireBelow may go (a primary-key
	// table's changelog above its newest snapshot stays).
	TTL         time.Duration
	ExpireBelow int64
	// Fenced: an unclean election made a new history, and the remote log
	// copies the old one until it is cut where the two part (remote
	// storage 6). Divergence answers that point for a manifest from the
	// leader's log: the first offset the manifest holds that the leader
	// holds otherwise (ok false: none). Required when Fenced.
	Fenced     bool
	Divergence func(*Manifest) (offset int64, ok bool)
}

// Committer commits a bucket's new remote log through the controller.
type Committer interface {
	// CommitRemoteLog replaces the committed remote log of b, which must
	// be at expectedVersion, with next, fenced by b's leader epoch. It
	// returns the handle as committed (with its new version).
	CommitRemoteLog(ctx context.Context, b *LeaderBucket, expectedVersion int64, next Handle) (Handle, error)
	// CutRemoteLog commits next as the remote log of b after an unclean
	// election, cut at cutOffset (it holds nothing at or past it): the
	// metadata drops the KV snapshots past cutOffset and lifts the fence.
	CutRemoteLog(ctx context.Context, b *LeaderBucket, expectedVersion int64, next Handle, cutOffset int64) (Handle, error)
}

// RemoteLogConfig configures a RemoteLog.
type RemoteLogConfig struct {
	// Store is where segments and manifests go. Required.
	Store ObjectStore
	// Root is the key prefix of this cluster's objects: its cluster id.
	// Required.
	Root string
	// Commit commits new manifests. Required.
	Commit Committer
	// MaxSegmentsPerRound bounds the segments one round uploads for one
	// bucket, so a bucket with a long backlog does not hold the round.
	// Default 8.
	MaxSegmentsPerRound int
	// Logger: nil discards.
	Logger *slog.Logger
	// Now is the clock of remote retention; nil is time.Now.
	Now func() time.Time
}

// DefaultMaxSegmentsPerRound is RemoteLogConfig.MaxSegmentsPerRound's default.
const DefaultMaxSegmentsPerRound = 8

// Validate reports the first invalid field.
func (c *RemoteLogConfig) Validate() error {
	switch {
	case c.Store == nil || c.Commit == nil:
		return pkgerr.New("tiering", "remote log config: Store and Commit are required")
	case ValidateKey(c.Root) != nil:
		return pkgerr.Errorf("tiering", "remote log config: root %q is not a valid key prefix", c.Root)
	case c.MaxSegmentsPerRound < 0:
		return pkgerr.New("tiering", "remote log config: negative MaxSegmentsPerRound")
	}
	return nil
}

// RemoteLog moves the sealed segments of the buckets a node leads to
// remote storage and keeps their remote retention, one round per bucket
// at a time (Tier). Rounds of different buckets may run concurrently.
type RemoteLog struct {
	cfg    RemoteLogConfig
	log    *slog.Logger
	reader *Reader

	mu sync.Mutex
	// manifests caches each bucket's newest manifest this node read or
	// committed, so a round needs no GET while it stays current.
	manifests map[bucketRef]*cachedManifest
}

type bucketRef struct {
	tableID uint64
	bucket  int32
}

type cachedManifest struct {
	handle   Handle
	manifest *Manifest
	// sweptEpoch is the leader epoch whose first round swept the bucket's
	// unreferenced objects (a crash between upload and commit leaves
	// some); -1: not yet.
	sweptEpoch int32
}

// NewRemoteLog checks cfg and returns a RemoteLog.
func NewRemoteLog(cfg RemoteLogConfig) (*RemoteLog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxSegmentsPerRound == 0 {
		cfg.MaxSegmentsPerRound = DefaultMaxSegmentsPerRound
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	reader, err := NewReader(ReaderConfig{Store: cfg.Store})
	if err != nil {
		return nil, err
	}
	return &RemoteLog{cfg: cfg, log: cfg.Logger, reader: reader, manifests: map[bucketRef]*cachedManifest{}}, nil
}

// Round says what one Tier call did.
type Round struct {
	Uploaded      int
	UploadedBytes int64
	Expired       int
	// Committed is the remote log after the round; Changed says the round
	// committed a new one.
	Committed Handle
	Changed   bool

	// replaced are the segments uploads replaced (Manifest.Add): garbage
	// once the round commits.
	replaced []RemoteSegment
}

// Tier runs one round for a bucket this node leads: upload the sealed
// segments below the high watermark that the remote log lacks (at most
// MaxSegmentsPerRound), drop the remote segments past the bucket's TTL,
// and, when either changed the list, write a new manifest and commit it.
// The objects a commit drops are deleted only after it. A failed upload
// commits what was uploaded before it and returns the error; a failed or
// refused commit deletes nothing (the next round starts again from the
// committed metadata).
func (r *RemoteLog) Tier(ctx context.Context, b *LeaderBucket) (Round, error) {
	if b.Fenced {
		return r.cut(ctx, b)
	}
	if !r.mayHaveWork(b) {
		return Round{Committed: b.Committed}, nil
	}
	cur, err := r.current(ctx, b)
	if err != nil {
		return Round{}, err
	}
	m := &Manifest{Format: ManifestFormat, TableID: b.TableID, Bucket: b.Bucket,
		Segments: append([]RemoteSegment(nil), cur.manifest.Segments...)}
	var round Round
	uploadErr := r.upload(ctx, b, m, &round)
	expired := r.expire(b, m)
	round.Expired = len(expired)
	if round.Uploaded == 0 && round.Expired == 0 {
		round.Committed = cur.handle
		return round, uploadErr
	}
	if len(cur.manifest.Segments) > 0 && m.Start() > cur.manifest.Start() && round.Expired == 0 {
		// Rule "remote storage" 5: only log.ttl moves the remote start.
		panic(fmt.Sprintf("tiering: table %d bucket %d: a round moved the remote start from %d to %d without expiring a segment",
			b.TableID, b.Bucket, cur.manifest.Start(), m.Start()))
	}
	next, err := r.commit(ctx, b, cur, m, -1)
	if err != nil {
		return round, errors.Join(uploadErr, err)
	}
	round.Committed, round.Changed = next, true
	// The commit replaced the old manifest and dropped the expired
	// segments: no reader that starts from the metadata finds them now.
	r.deleteReplaced(ctx, b, cur, m, append(expired, round.replaced...))
	return round, uploadErr
}

// mayHaveWork says whether a round could change the bucket's remote log:
// a sealed segment below the high watermark lies past the remote end, or
// remote segments may have expired. Without, a round does no I/O at all:
// a node's thousands of idle buckets cost nothing per interval.
func (r *RemoteLog) mayHaveWork(b *LeaderBucket) bool {
	end := b.Committed.EndOffset
	r.mu.Lock()
	c := r.manifests[bucketRef{b.TableID, b.Bucket}]
	r.mu.Unlock()
	if c != nil && c.handle.Version >= b.Committed.Version {
		end = c.handle.EndOffset
	}
	for _, seg := range b.Log.Segments() {
		if seg.Sealed && seg.Bytes > 0 && seg.NextOffset <= b.HighWatermark && seg.NextOffset > end {
			return true
		}
	}
	if b.TTL <= 0 || b.Committed.Segments == 0 {
		return false
	}
	if c == nil || c.handle.Version < b.Committed.Version {
		return true // the manifest, read once, says how old its segments are
	}
	cutoff := r.cfg.Now().Add(-b.TTL).UnixMilli()
	return len(c.manifest.Segments) > 0 && c.manifest.Segments[0].MaxTimestamp < cutoff && c.manifest.Segments[0].NextOffset <= b.ExpireBelow
}

// current returns the bucket's committed manifest: the cached one when it
// is as new as the metadata's, else read from the store. The first round
// of a leadership also sweeps objects no committed manifest references.
func (r *RemoteLog) current(ctx context.Context, b *LeaderBucket) (*cachedManifest, error) {
	ref := bucketRef{b.TableID, b.Bucket}
	r.mu.Lock()
	c := r.manifests[ref]
	r.mu.Unlock()
	if c == nil || c.handle.Version < b.Committed.Version {
		m := &Manifest{Format: ManifestFormat, TableID: b.TableID, Bucket: b.Bucket}
		if b.Committed.ManifestKey != "" {
			var err error
			if m, err = r.reader.Manifest(ctx, b.Committed); err != nil {
				return nil, err
			}
			if m.TableID != b.TableID || m.Bucket != b.Bucket || m.End() != b.Committed.EndOffset {
				return nil, fmt.Errorf("%w: %s is table %d bucket %d ending at %d; the metadata names it for table %d bucket %d ending at %d",
					ErrBadManifest, b.Committed.ManifestKey, m.TableID, m.Bucket, m.End(), b.TableID, b.Bucket, b.Committed.EndOffset)
			}
		}
		c = &cachedManifest{handle: b.Committed, manifest: m, sweptEpoch: -1}
		r.store(ref, c)
	}
	if c.sweptEpoch != b.LeaderEpoch {
		if err := r.sweep(ctx, b, c); err != nil {
			r.log.Warn("sweeping unreferenced remote objects", "table", b.TableID, "bucket", b.Bucket, "err", err)
		} else {
			c.sweptEpoch = b.LeaderEpoch
		}
	}
	return c, nil
}

func (r *RemoteLog) store(ref bucketRef, c *cachedManifest) {
	r.mu.Lock()
	r.manifests[ref] = c
	r.mu.Unlock()
}

// Forget drops what the RemoteLog caches of a bucket (its leadership
// ended, or its table was dropped).
func (r *RemoteLog) Forget(tableID uint64, bucket int32) {
	r.mu.Lock()
	delete(r.manifests, bucketRef{tableID, bucket})
	r.mu.Unlock()
}

// maxManifestBytes bounds a manifest read: about 100,000 segments.
const maxManifestBytes = 64 << 20

// upload copies the sealed segments below the high watermark that end past
// the manifest, oldest first, and appends them to it. A segment that
// starts past the manifest's end (this replica's log starts later: it was
// restored from a KV snapshot, or a replica that had what lies between
// lost it) leaves a gap: the older segments stay, since only log.ttl moves
// the remote start, and whatever copies of the gap's offsets replicas hold
// stay too (local retention keeps what the remote log does not cover).
func (r *RemoteLog) upload(ctx context.Context, b *LeaderBucket, m *Manifest, round *Round) error {
	for _, seg := range b.Log.Segments() {
		if round.Uploaded >= r.cfg.MaxSegmentsPerRound {
			return nil
		}
		if !seg.Sealed || seg.NextOffset > b.HighWatermark || seg.NextOffset <= m.End() || seg.Bytes == 0 {
			continue
		}
		rs, err := r.uploadSegment(ctx, b, seg.BaseOffset)
		if errors.Is(err, logstore.ErrNotSealed) {
			continue // retention or truncation took it meanwhile
		}
		if err != nil {
			return err
		}
		end := m.End()
		gap, replaced := m.Add(rs)
		if gap {
			r.log.Warn("remote log continues after a gap: the leader's log starts past the remote end; no segment holds the offsets between",
				"table", b.TableID, "bucket", b.Bucket, "remote_end", end, "segment_base", rs.BaseOffset)
		}
		round.replaced = append(round.replaced, replaced...)
		round.Uploaded++
		round.UploadedBytes += rs.Bytes
	}
	return nil
}

// uploadSegment stores one sealed segment's batches and index.
func (r *RemoteLog) uploadSegment(ctx context.Context, b *LeaderBucket, base int64) (RemoteSegment, error) {
	s, err := b.Log.OpenSealed(base)
	if err != nil {
		return RemoteSegment{}, err
	}
	defer s.Close()
	ws, err := verifySegment(s.Data(), s.Bytes, s.BaseOffset, s.NextOffset)
	if err != nil {
		return RemoteSegment{}, err
	}
	dataKey, indexKey, writersKey := segmentKeys(r.cfg.Root, b.TableID, b.Bucket, s.BaseOffset, b.LeaderEpoch)
	if err := r.cfg.Store.Put(ctx, dataKey, s.Data(), s.Bytes); err != nil {
		return RemoteSegment{}, pkgerr.Errorf("tiering", "upload segment %d of table %d bucket %d: %w", base, b.TableID, b.Bucket, err)
	}
	ix := s.Index.Marshal()
	if err := r.cfg.Store.Put(ctx, indexKey, bytes.NewReader(ix), int64(len(ix))); err != nil {
		return RemoteSegment{}, pkgerr.Errorf("tiering", "upload index of segment %d of table %d bucket %d: %w", base, b.TableID, b.Bucket, err)
	}
	if err := putWriters(ctx, r.cfg.Store, writersKey, ws); err != nil {
		return RemoteSegment{}, pkgerr.Errorf("tiering", "upload writer state of segment %d of table %d bucket %d: %w", base, b.TableID, b.Bucket, err)
	}
	rs := RemoteSegment{BaseOffset: s.BaseOffset, NextOffset: s.NextOffset, Bytes: s.Bytes, MaxTimestamp: s.MaxTimestamp,
		UploadEpoch: b.LeaderEpoch, DataKey: dataKey, IndexKey: indexKey, WritersKey: writersKey}
	for _, e := range s.Epochs {
		rs.Epochs = append(rs.Epochs, EpochStart{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	r.log.Debug("uploaded segment", "table", b.TableID, "bucket", b.Bucket, "base_offset", s.BaseOffset,
		"next_offset", s.NextOffset, "bytes", s.Bytes)
	return rs, nil
}

// expire drops the oldest segments whose newest batch is past the TTL and
// that lie wholly below ExpireBelow, and returns them.
func (r *RemoteLog) expire(b *LeaderBucket, m *Manifest) []RemoteSegment {
	if b.TTL <= 0 {
		return nil
	}
	cutoff := r.cfg.Now().Add(-b.TTL).UnixMilli()
	n := 0
	for _, s := range m.Segments {
		if s.MaxTimestamp >= cutoff || s.NextOffset > b.ExpireBelow {
			break
		}
		n++
	}
	expired := append([]RemoteSegment(nil), m.Segments[:n]...)
	m.Segments = m.Segments[n:]
	return expired
}

// cut is the round of a bucket fenced by an unclean election: it keeps
// the segments of the committed manifest wholly below the point where the
// leader's log parts from them, or below the manifest's end when it does
// not, and commits that as a fence cut; the KV snapshots past the point go
// with it (the metadata drops them), since below the remote end is all of
// the old history the leader can compare with. The dropped segments'
// objects are deleted after the commit. Uploads resume next round.
func (r *RemoteLog) cut(ctx context.Context, b *LeaderBucket) (Round, error) {
	cur, err := r.current(ctx, b)
	if err != nil {
		return Round{}, err
	}
	at := cur.manifest.End()
	if len(cur.manifest.Segments) == 0 {
		at = cur.handle.EndOffset
	}
	if d, ok := b.Divergence(cur.manifest); ok {
		at = min(at, d)
	}
	m := &Manifest{Format: ManifestFormat, TableID: b.TableID, Bucket: b.Bucket,
		Segments: append([]RemoteSegment(nil), cur.manifest.Segments...)}
	var shortenErr error
	dropped := m.CutAt(at, func(s RemoteSegment, offset int64) (int64, bool) {
		n, err := r.batchPosition(ctx, s, offset)
		if err != nil {
			shortenErr = err
		}
		return n, err == nil
	})
	if shortenErr != nil {
		// Dropping the segment whole could lose offsets only it holds.
		return Round{}, pkgerr.Errorf("tiering", "cut the remote log of table %d bucket %d at %d: %w", b.TableID, b.Bucket, at, shortenErr)
	}
	r.log.Warn("cutting the remote log after an unclean election: the leader's history parts from it there",
		"table", b.TableID, "bucket", b.Bucket, "cut_offset", at, "remote_end", cur.handle.EndOffset, "segments_dropped", len(dropped))
	next, err := r.commit(ctx, b, cur, m, at)
	if err != nil {
		return Round{}, err
	}
	r.deleteReplaced(ctx, b, cur, m, dropped)
	return Round{Committed: next, Changed: true}, nil
}

// deleteReplaced deletes, after a commit of m, the objects it no longer
// references: the manifest it replaced (cur's) and those of the segments
// gone, but for a segment m still holds under the same keys (re-uploaded
// from the same base in the same epoch, or shortened by a cut). A failure
// leaves garbage the bucket's next leadership sweeps.
func (r *RemoteLog) deleteReplaced(ctx context.Context, b *LeaderBucket, cur *cachedManifest, m *Manifest, gone []RemoteSegment) {
	var garbage []string
	if cur.handle.ManifestKey != "" {
		garbage = append(garbage, cur.handle.ManifestKey)
	}
	for _, s := range gone {
		if s.DataKey == "" || slices.ContainsFunc(m.Segments, func(k RemoteSegment) bool { return k.DataKey == s.DataKey }) {
			continue
		}
		garbage = append(garbage, s.DataKey, s.IndexKey)
		if s.WritersKey != "" {
			garbage = append(garbage, s.WritersKey)
		}
	}
	if err := r.cfg.Store.Delete(ctx, garbage...); err != nil {
		r.log.Warn("deleting replaced remote objects (they stay as garbage until the bucket's next leadership sweeps them)",
			"table", b.TableID, "bucket", b.Bucket, "objects", len(garbage), "err", err)
	}
}

// batchPosition is the byte position of the batch starting at offset in
// segment s: found from the index's floor, reading batch headers on.
func (r *RemoteLog) batchPosition(ctx context.Context, s RemoteSegment, offset int64) (int64, error) {
	ix, err := r.reader.index(ctx, s)
	if err != nil {
		return 0, err
	}
	header := make([]byte, record.HeaderSize)
	for pos := ix.PositionFor(offset); pos < s.Bytes; {
		body, err := r.cfg.Store.Get(ctx, s.DataKey, pos, record.HeaderSize)
		if err != nil {
			return 0, err
		}
		_, err = io.ReadFull(body, header)
		body.Close()
		if err != nil {
			return 0, pkgerr.Errorf("tiering", "batch header at byte %d of %s: %w", pos, s.DataKey, err)
		}
		n, ok := record.PeekSize(header)
		b := record.Batch(header)
		switch {
		case !ok:
			return 0, fmt.Errorf("%w: batch header at byte %d of %s", record.ErrCorruptBatch, pos, s.DataKey)
		case b.BaseOffset() == offset:
			return pos, nil
		case b.BaseOffset() > offset:
			return 0, pkgerr.Errorf("tiering", "no batch starts at offset %d in %s (one starts at %d)", offset, s.DataKey, b.BaseOffset())
		}
		pos += int64(n)
	}
	return 0, pkgerr.Errorf("tiering", "offset %d is past segment %s", offset, s.DataKey)
}

// commit writes the manifest under a new key and commits it: as the cut of
// a fenced remote log at cutAt when that is not negative.
func (r *RemoteLog) commit(ctx context.Context, b *LeaderBucket, cur *cachedManifest, m *Manifest, cutAt int64) (Handle, error) {
	data, err := m.Marshal()
	if err != nil {
		return Handle{}, err // a bug: the rounds build only valid manifests
	}
	key := manifestKey(r.cfg.Root, b.TableID, b.Bucket, cur.handle.Version+1, b.LeaderEpoch, nonce())
	if err := r.cfg.Store.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return Handle{}, pkgerr.Errorf("tiering", "write manifest %s: %w", key, err)
	}
	next := Handle{ManifestKey: key, StartOffset: m.Start(), EndOffset: m.End(), RunStart: m.RunStart(),
		Segments: int32(len(m.Segments)), Bytes: m.Bytes(), MaxTimestamp: m.MaxTimestamp()}
	if len(m.Segments) == 0 {
		// An empty remote log keeps its place: the end it reached, or
		// where a cut left it.
		place := cur.handle.EndOffset
		if cutAt >= 0 {
			place = min(place, cutAt)
		}
		next.StartOffset, next.EndOffset, next.RunStart, next.MaxTimestamp = place, place, place, math.MinInt64
	}
	var committed Handle
	if cutAt >= 0 {
		committed, err = r.cfg.Commit.CutRemoteLog(ctx, b, cur.handle.Version, next, cutAt)
	} else {
		committed, err = r.cfg.Commit.CommitRemoteLog(ctx, b, cur.handle.Version, next)
	}
	if err != nil {
		// Refused or unknown: the manifest written is garbage unless the
		// commit landed; either way the next round rereads the metadata.
		r.Forget(b.TableID, b.Bucket)
		return Handle{}, pkgerr.Errorf("tiering", "commit remote log of table %d bucket %d: %w", b.TableID, b.Bucket, err)
	}
	r.store(bucketRef{b.TableID, b.Bucket}, &cachedManifest{handle: committed, manifest: m, sweptEpoch: cur.sweptEpoch})
	r.log.Info("remote log committed", "table", b.TableID, "bucket", b.Bucket, "version", committed.Version,
		"start_offset", committed.StartOffset, "end_offset", committed.EndOffset, "segments", committed.Segments)
	return committed, nil
}

// sweep deletes the bucket's objects that no manifest can come to
// reference: uploads and manifests of rounds whose commit never landed.
// The leader sweeps at the start of its leader epoch E, from the metadata
// it became leader by, which holds every commit of an earlier epoch
// (after the leader change, those are FENCED): so an unreferenced object
// an earlier epoch wrote is garbage. Of its own epoch's objects, only
// manifests of a version the metadata already passed are: a commit of its
// own that the metadata it holds does not show yet may still reference
// the others.
func (r *RemoteLog) sweep(ctx context.Context, b *LeaderBucket, c *cachedManifest) error {
	keep := map[string]bool{c.handle.ManifestKey: true}
	for _, s := range c.manifest.Segments {
		keep[s.DataKey], keep[s.IndexKey], keep[s.WritersKey] = true, true, true
	}
	prefix := bucketPrefix(r.cfg.Root, b.TableID, b.Bucket)
	var garbage []string
	err := r.cfg.Store.List(ctx, prefix, func(o ObjectInfo) error {
		if keep[o.Key] {
			return nil
		}
		k := parseBucketKey(strings.TrimPrefix(o.Key, prefix))
		switch {
		case k.kind == kindUnknown:
		case k.epoch < b.LeaderEpoch:
			garbage = append(garbage, o.Key)
		case k.kind == kindManifest && k.epoch == b.LeaderEpoch && k.version <= c.handle.Version:
			garbage = append(garbage, o.Key)
		}
		return nil
	})
	if err != nil || len(garbage) == 0 {
		return err
	}
	r.log.Info("deleting unreferenced remote objects", "table", b.TableID, "bucket", b.Bucket, "objects", len(garbage))
	return r.cfg.Store.Delete(ctx, garbage...)
}

// DeleteTable deletes every remote object of a dropped table.
func (r *RemoteLog) DeleteTable(ctx context.Context, tableID uint64) (int, error) {
	var keys []string
	if err := r.cfg.Store.List(ctx, tablePrefix(r.cfg.Root, tableID), func(o ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return 0, err
	}
	r.mu.Lock()
	for ref := range r.manifests {
		if ref.tableID == tableID {
			delete(r.manifests, ref)
		}
	}
	r.mu.Unlock()
	if len(keys) == 0 {
		return 0, nil
	}
	return len(keys), r.cfg.Store.Delete(ctx, keys...)
}

// nonce makes a manifest key unique.
func nonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
