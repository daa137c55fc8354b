package client

import (
	"context"
	"fmt"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// KVSnapshot is a committed KV snapshot of one primary-key bucket.
type KVSnapshot struct {
	Bucket int32 `json:"bucket"`
	// Offset is the log offset the snapshot covers: the store held the
	// changelog below it.
	Offset      int64     `json:"offset"`
	Created     time.Time `json:"created"`
	Rows        int64     `json:"rows"`
	Bytes       int64     `json:"bytes"`
	ManifestKey string    `json:"manifest_key"`
	// Of this snapshot: its parts, those an earlier snapshot had stored
	// already, and the bytes uploaded.
	Parts         int   `json:"parts"`
	ReusedParts   int   `json:"reused_parts"`
	UploadedBytes int64 `json:"uploaded_bytes"`
}

// SnapshotKV has the bucket's leader take a KV snapshot of the bucket now
// and commit it. Retriable errors (a leader change) are retried with fresh
// metadata until ctx ends.
func (t *Table) SnapshotKV(ctx context.Context, bucket int32) (KVSnapshot, error) {
	if err := t.checkBucket(bucket); err != nil {
		return KVSnapshot{}, err
	}
	if len(t.info.PrimaryKey) == 0 {
		return KVSnapshot{}, fmt.Errorf("%w: %s has no KV snapshots", ErrNotPrimaryKeyTable, t.qualifiedName())
	}
	var out KVSnapshot
	err := t.withLeader(ctx, bucket, func(ctx context.Context, addr string) error {
		resp, err := t.tablet(addr).SnapshotKV(ctx, &pb.SnapshotKVRequest{TableId: t.info.ID, Bucket: bucket})
		if err != nil {
			return pkgerr.Errorf("client", "KV snapshot of %s bucket %d at %s: %w", t.qualifiedName(), bucket, addr, err)
		}
		s := resp.GetSnapshot()
		out = KVSnapshot{Bucket: bucket, Offset: s.GetOffset(), Created: time.UnixMilli(s.GetCreatedMs()), Rows: s.GetRows(),
			Bytes: s.GetBytes(), ManifestKey: s.GetManifestKey(), Parts: int(resp.GetParts()),
			ReusedParts: int(resp.GetReusedParts()), UploadedBytes: resp.GetUploadedBytes()}
		return nil
	})
	return out, err
}
