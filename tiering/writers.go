package tiering

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
)

// writersPerSegment is how many batches per idempotent writer a segment's
// writer state keeps: what a bucket remembers to answer retries.
const writersPerSegment = 5

// WriterBatch is one remembered batch of an idempotent writer: the writer
// state a replica rebuilds when it starts over past a remote segment
// (retries of batches before it are then still recognized).
type WriterBatch struct {
	WriterID    int64 `json:"writer_id"`
	Sequence    int32 `json:"sequence"`
	BaseOffset  int64 `json:"base_offset"`
	LastOffset  int64 `json:"last_offset"`
	TimestampMs int64 `json:"timestamp_ms"`
}

// Writers reads the writer state uploaded with a remote segment (nil for
// a segment uploaded without one).
func (r *Reader) Writers(ctx context.Context, seg RemoteSegment) ([]WriterBatch, error) {
	if seg.WritersKey == "" {
		return nil, nil
	}
	data, err := r.readObject(ctx, seg.WritersKey, maxIndexBytes)
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "read writer state: %w", err)
	}
	var out []WriterBatch
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%w: writer state %s: %v", ErrBadManifest, seg.WritersKey, err)
	}
	return out, nil
}

// WritersBefore returns the writer state a replica starting over at offset
// needs: the remembered batches of the remote segments before offset (the
// last two, as a replica's own rebuild replays), those wholly below it, in
// offset order.
func (r *Reader) WritersBefore(ctx context.Context, h Handle, offset int64) ([]WriterBatch, error) {
	m, err := r.Manifest(ctx, h)
	if err != nil {
		return nil, err
	}
	var segs []RemoteSegment
	for _, s := range m.Segments {
		if s.BaseOffset < offset {
			segs = append(segs, s)
		}
	}
	segs = segs[max(0, len(segs)-2):]
	var out []WriterBatch
	for _, s := range segs {
		ws, err := r.Writers(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if w.LastOffset < offset && (len(out) == 0 || w.BaseOffset > out[len(out)-1].BaseOffset) {
				out = append(out, w)
			}
		}
	}
	return out, nil
}

// putWriters uploads a segment's writer state.
func putWriters(ctx context.Context, store ObjectStore, key string, ws []WriterBatch) error {
	data, err := json.Marshal(ws)
	if err != nil {
		return err
	}
	return store.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
}
