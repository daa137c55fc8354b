package tiering

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/floedb/floe/internal/pkgerr"
)

// ManifestFormat is the version of the manifest encoding.
const ManifestFormat = 1

// ErrBadManifest: a manifest that does not decode or breaks its rules.
var ErrBadManifest = pkgerr.New("tiering", "bad remote manifest")

// Manifest lists a bucket's remote log segments, oldest first. It is an
// immutable object in remote storage; the metadata commits which one is
// current (pb.RemoteLog), so a reader that has the committed key reads a
// consistent list.
//
// Segments are ordered by base offset and by next offset, both strictly.
// Two may overlap when leadership moved between uploads (each replica
// rolls its own segments): the offsets both hold are the same batches, and
// Find picks one. They leave no gap, but one: a leader restored from a KV
// snapshot starts its log at the snapshot's offset, which may lie past the
// remote end, and it keeps the older segments (the remote start moves
// forward only by log.ttl) and uploads from its own start. No segment holds
// the offsets between; RunStart is where the newest gap-free run begins.
type Manifest struct {
	Format   int             `json:"format"`
	TableID  uint64          `json:"table_id"`
	Bucket   int32           `json:"bucket"`
	Segments []RemoteSegment `json:"segments"`
}

// RemoteSegment is one uploaded log segment.
type RemoteSegment struct {
	BaseOffset int64 `json:"base_offset"`
	// NextOffset is the offset after its last batch.
	NextOffset int64 `json:"next_offset"`
	Bytes      int64 `json:"bytes"`
	// MaxTimestamp is its newest commit timestamp, ms.
	MaxTimestamp int64 `json:"max_timestamp"`
	// Epochs are the leader epochs of its batches (the first starts at
	// BaseOffset).
	Epochs []EpochStart `json:"epochs"`
	// UploadEpoch is the leader epoch of the replica that uploaded it.
	UploadEpoch int32 `json:"upload_epoch"`
	// DataKey holds the batches, IndexKey the encoded offset and time
	// index (logstore.SegmentIndex).
	DataKey  string `json:"data_key"`
	IndexKey string `json:"index_key"`
	// WritersKey holds the idempotent writers' last batches in the
	// segment (WriterBatch, JSON); "" when uploaded without.
	WritersKey string `json:"writers_key,omitempty"`
	// ObjectBytes is the size of the data object when the segment holds
	// only its first Bytes: a segment an unclean election's cut shortened
	// (CutAt), whose index still describes the whole object. 0: Bytes.
	ObjectBytes int64 `json:"object_bytes,omitempty"`
}

// objectBytes is the size of the segment's data object.
func (s RemoteSegment) objectBytes() int64 { return max(s.ObjectBytes, s.Bytes) }

// EpochStart says a leader epoch's batches start at an offset.
type EpochStart struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// Start is the first offset the manifest holds; End the offset after the
// last. An empty manifest has neither (0, 0).
func (m *Manifest) Start() int64 {
	if len(m.Segments) == 0 {
		return 0
	}
	return m.Segments[0].BaseOffset
}

// End is the offset after the newest segment's last batch.
func (m *Manifest) End() int64 {
	if len(m.Segments) == 0 {
		return 0
	}
	return m.Segments[len(m.Segments)-1].NextOffset
}

// Bytes totals the segments' sizes.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, s := range m.Segments {
		n += s.Bytes
	}
	return n
}

// MaxTimestamp is the newest commit timestamp of any segment, ms
// (math.MinInt64 when empty).
func (m *Manifest) MaxTimestamp() int64 {
	ts := int64(math.MinInt64)
	for _, s := range m.Segments {
		ts = max(ts, s.MaxTimestamp)
	}
	return ts
}

// Add appends seg, an uploaded segment that ends past the manifest, and
// reports whether it starts past the end (a gap: see Manifest). The older
// segments stay whatever the gap: only log.ttl moves the remote start
// (remote storage 5), but those seg holds whole (a segment a cut
// shortened, re-uploaded from the same base by the new leader) are
// replaced, and returned: nothing references their objects any more.
func (m *Manifest) Add(seg RemoteSegment) (gap bool, replaced []RemoteSegment) {
	gap = len(m.Segments) > 0 && seg.BaseOffset > m.End()
	for n := len(m.Segments); n > 0 && m.Segments[n-1].BaseOffset >= seg.BaseOffset; n-- {
		replaced = append(replaced, m.Segments[n-1])
		m.Segments = m.Segments[:n-1]
	}
	m.Segments = append(m.Segments, seg)
	return gap, replaced
}

// CutAt is an unclean election's cut at the new leader's divergence point
// (remote storage 6): the segments wholly below offset stay, one that holds
// it is shortened to end there (shorten answers the byte position of the
// batch at offset in it; ok false: drop it whole), and the rest go. It
// returns the segments whose objects nothing references any more. A
// segment is shortened rather than dropped because its offsets below the
// new leader's log start may be the only copy left.
func (m *Manifest) CutAt(offset int64, shorten func(s RemoteSegment, offset int64) (bytes int64, ok bool)) (dropped []RemoteSegment) {
	kept := m.Segments[:0:0]
	for _, s := range m.Segments {
		switch {
		case s.NextOffset <= offset:
			kept = append(kept, s)
			continue
		case s.BaseOffset < offset:
			if n, ok := shorten(s, offset); ok && n > 0 && n < s.Bytes {
				kept = append(kept, s.shortened(offset, n))
				continue
			}
		}
		dropped = append(dropped, s)
	}
	m.Segments = kept
	return dropped
}

// shortened is s holding only its batches below next, the first bytes of
// its object.
func (s RemoteSegment) shortened(next, bytes int64) RemoteSegment {
	s.ObjectBytes = s.objectBytes()
	s.NextOffset, s.Bytes = next, bytes
	epochs := make([]EpochStart, 0, len(s.Epochs))
	for _, e := range s.Epochs {
		if e.StartOffset < next {
			epochs = append(epochs, e)
		}
	}
	s.Epochs = epochs
	return s
}

// RunStart is where the newest gap-free run of segments starts: the
// manifest's start unless it has a gap (see Manifest).
func (m *Manifest) RunStart() int64 {
	for i := len(m.Segments) - 1; i > 0; i-- {
		if m.Segments[i].BaseOffset > m.Segments[i-1].NextOffset {
			return m.Segments[i].BaseOffset
		}
	}
	return m.Start()
}

// Find returns the segment holding offset: the newest one starting at or
// before it, which ends furthest on. An offset in a gap (see Manifest) is
// answered with the first segment after it, whose batches a reader takes
// up from there, as it would past records that expired.
func (m *Manifest) Find(offset int64) (RemoteSegment, bool) {
	for i := len(m.Segments) - 1; i >= 0; i-- {
		if s := m.Segments[i]; s.BaseOffset <= offset {
			if offset >= s.NextOffset && i+1 < len(m.Segments) {
				return m.Segments[i+1], true
			}
			return s, offset < s.NextOffset
		}
	}
	return RemoteSegment{}, false
}

// FindTime returns the first segment that may hold a batch with a commit
// timestamp of at least ts (ms).
func (m *Manifest) FindTime(ts int64) (RemoteSegment, bool) {
	for _, s := range m.Segments {
		if s.MaxTimestamp >= ts {
			return s, true
		}
	}
	return RemoteSegment{}, false
}

// Validate checks the manifest's rules.
func (m *Manifest) Validate() error {
	if m.Format != ManifestFormat {
		return fmt.Errorf("%w: format %d, this build reads %d", ErrBadManifest, m.Format, ManifestFormat)
	}
	for i, s := range m.Segments {
		switch {
		case s.BaseOffset < 0 || s.NextOffset <= s.BaseOffset || s.Bytes <= 0 || (s.ObjectBytes != 0 && s.ObjectBytes < s.Bytes):
			return fmt.Errorf("%w: segment %d holds [%d, %d) in %d bytes", ErrBadManifest, i, s.BaseOffset, s.NextOffset, s.Bytes)
		case ValidateKey(s.DataKey) != nil || ValidateKey(s.IndexKey) != nil || (s.WritersKey != "" && ValidateKey(s.WritersKey) != nil):
			return fmt.Errorf("%w: segment %d: keys %q, %q", ErrBadManifest, i, s.DataKey, s.IndexKey)
		case len(s.Epochs) == 0 || s.Epochs[0].StartOffset != s.BaseOffset:
			return fmt.Errorf("%w: segment %d: epochs %v do not start at %d", ErrBadManifest, i, s.Epochs, s.BaseOffset)
		}
		for j := 1; j < len(s.Epochs); j++ {
			if e, p := s.Epochs[j], s.Epochs[j-1]; e.Epoch <= p.Epoch || e.StartOffset <= p.StartOffset || e.StartOffset >= s.NextOffset {
				return fmt.Errorf("%w: segment %d: epochs %v out of order", ErrBadManifest, i, s.Epochs)
			}
		}
		if i == 0 {
			continue
		}
		if p := m.Segments[i-1]; s.BaseOffset <= p.BaseOffset || s.NextOffset <= p.NextOffset {
			return fmt.Errorf("%w: segment %d [%d, %d) does not follow [%d, %d)", ErrBadManifest, i,
				s.BaseOffset, s.NextOffset, p.BaseOffset, p.NextOffset)
		}
	}
	return nil
}

// Marshal encodes the manifest as JSON (readable by an operator with any
// S3 tool).
func (m *Manifest) Marshal() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return json.MarshalIndent(m, "", " ")
}

// DecodeManifest reads and validates a manifest.
func DecodeManifest(data []byte) (*Manifest, error) {
	m := &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// EpochRanges calls fn with each run of offsets the remote segments hold
// in one leader epoch, [start, end), oldest first; a gap between
// segments is in none. A follower's log and a leader's are checked
// against them (replication.RemoteDisagreement, replication.Divergence).
func (m *Manifest) EpochRanges(fn func(epoch int32, start, end int64)) {
	for _, s := range m.Segments {
		for i, e := range s.Epochs {
			end := s.NextOffset
			if i+1 < len(s.Epochs) {
				end = min(end, s.Epochs[i+1].StartOffset)
			}
			if e.StartOffset < end {
				fn(e.Epoch, e.StartOffset, end)
			}
		}
	}
}
