package client

import (
	"context"
	"fmt"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// StartPosition says where a LogScanner starts reading a bucket.
type StartPosition struct {
	kind      positionKind
	offset    int64
	timestamp time.Time
}

type positionKind uint8

const (
	positionEarliest positionKind = iota
	positionLatest
	positionOffset
	positionTimestamp
	positionLogStart
)

// Earliest starts at the bucket's first record still kept: in a
// lake-enabled table, the lake's first when the lake holds the records
// the log no longer has (the union read: the lake's files up to the
// offsets its version covers, then the log from exactly there).
func Earliest() StartPosition { return StartPosition{kind: positionEarliest} }

// EarliestInLog starts at the bucket's log start offset (local, or below
// it the remote log's), leaving out what only a lake-enabled table's
// lake still holds.
func EarliestInLog() StartPosition { return StartPosition{kind: positionLogStart} }

// Latest starts at the bucket's high watermark when the subscription is
// resolved (at the next Poll): only records written from then on.
func Latest() StartPosition { return StartPosition{kind: positionLatest} }

// AtOffset starts at offset n.
func AtOffset(n int64) StartPosition { return StartPosition{kind: positionOffset, offset: n} }

// AtTimestamp starts at the first record committed at or after t, as the
// bucket leader's time index says (ListOffsets).
func AtTimestamp(t time.Time) StartPosition {
	return StartPosition{kind: positionTimestamp, timestamp: t}
}

// String describes the position: "earliest", "latest", "offset 42",
// "timestamp 2024-01-02T03:04:05Z".
func (p StartPosition) String() string {
	switch p.kind {
	case positionLatest:
		return "latest"
	case positionOffset:
		return fmt.Sprintf("offset %d", p.offset)
	case positionTimestamp:
		return "timestamp " + p.timestamp.Format(time.RFC3339Nano)
	case positionLogStart:
		return "earliest in the log"
	default:
		return "earliest"
	}
}

// ListOffset resolves a position in one bucket to an offset, asking the
// bucket's leader: Earliest is the first record kept (in the lake or the
// log), EarliestInLog the log start offset, Latest the high
// watermark, AtTimestamp the first offset committed at or after the time.
// AtOffset is returned as it is. Retriable errors are retried with fresh
// metadata until ctx ends.
func (t *Table) ListOffset(ctx context.Context, bucket int32, at StartPosition) (int64, error) {
	if err := t.checkBucket(bucket); err != nil {
		return 0, err
	}
	if at.kind == positionOffset {
		return at.offset, nil
	}
	var offset int64
	err := t.withLeader(ctx, bucket, func(ctx context.Context, addr string) error {
		var err error
		offset, err = t.listOffset(ctx, addr, bucket, at)
		return err
	})
	return offset, err
}

// listOffset asks the node at addr once.
func (t *Table) listOffset(ctx context.Context, addr string, bucket int32, at StartPosition) (int64, error) {
	req := &pb.ListOffsetsRequest{TableId: t.info.ID, Bucket: bucket}
	switch at.kind {
	case positionEarliest, positionLogStart:
		req.Spec = pb.OffsetSpec_OFFSET_SPEC_EARLIEST
	case positionLatest:
		req.Spec = pb.OffsetSpec_OFFSET_SPEC_LATEST
	case positionTimestamp:
		req.Spec = pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP
		req.TimestampMs = at.timestamp.UnixMilli()
	case positionOffset:
		return at.offset, nil
	}
	resp, err := t.tablet(addr).ListOffsets(ctx, req)
	if err != nil {
		return 0, pkgerr.Errorf("client", "list offsets of %s bucket %d (%v) at %s: %w", t.qualifiedName(), bucket, at, addr, err)
	}
	if at.kind == positionLogStart {
		return resp.LogStartOffset, nil
	}
	return resp.Offset, nil
}

// checkBucket reports a bucket number outside the table.
func (t *Table) checkBucket(bucket int32) error {
	if bucket < 0 || bucket >= t.info.Buckets {
		return pkgerr.Errorf("client", "bucket %d not in [0, %d) of %s.%s", bucket, t.info.Buckets, t.info.Database, t.info.Name)
	}
	return nil
}

// withLeader runs fn against bucket's leader, refreshing the metadata and
// retrying with backoff while the error is retriable, until ctx ends.
func (t *Table) withLeader(ctx context.Context, bucket int32, fn func(ctx context.Context, addr string) error) error {
	b := newRetryBackoff()
	for {
		addr, version, err := t.leader(bucket)
		if err == nil {
			err = fn(ctx, addr)
		}
		if err == nil || !retriable(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		_ = t.refreshAfter(ctx, version) // a failed refresh shows up as the next attempt's error
		if !b.Wait(ctx) {
			return err
		}
	}
}

// ListOffsets returns, for every bucket of a table, the offset at a
// position: Earliest (the log start), Latest (the high watermark) or
// AtTimestamp (the first record at or after it).
func (a *Admin) ListOffsets(ctx context.Context, database, table string, at StartPosition) ([]int64, error) {
	t, err := a.c.Table(ctx, database, table)
	if err != nil {
		return nil, err
	}
	out := make([]int64, t.Buckets())
	for b := range t.Buckets() {
		if out[b], err = t.ListOffset(ctx, b, at); err != nil {
			return nil, err
		}
	}
	return out, nil
}
