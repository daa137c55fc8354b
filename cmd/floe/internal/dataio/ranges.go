package dataio

import (
	"context"
	"errors"
	"time"

	"github.com/floedb/floe/client"
)

// ErrStopPoll ends PollRanges early, without an error: a limit was reached.
var ErrStopPoll = errors.New("stop polling")

// BucketRange is the part of a bucket's log a read covers: from start to
// below end (its high watermark when the read began; with follow, unbounded).
type BucketRange struct {
	Bucket     int32
	Start, End int64
}

// ResolveRanges finds where each bucket's read starts, at from, and without
// follow where it ends: the bucket's high watermark now, so that the read
// ends too. Buckets with nothing to read are left out (without follow).
// Each bucket's lookups are bounded by timeout.
func ResolveRanges(ctx context.Context, tbl *client.Table, buckets []int32, from client.StartPosition, follow bool,
	timeout time.Duration) ([]BucketRange, error) {
	var out []BucketRange
	for _, b := range buckets {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		start, err := tbl.ListOffset(tctx, b, from)
		var end int64
		if err == nil && !follow {
			end, err = tbl.ListOffset(tctx, b, client.Latest())
		}
		cancel()
		if err != nil {
			return nil, err
		}
		if !follow && start >= end {
			continue
		}
		out = append(out, BucketRange{Bucket: b, Start: start, End: end})
	}
	return out, nil
}

// PollRanges subscribes s to every range and polls it, handing emit each
// record below its bucket's end, in offset order within a bucket, and calling
// polled after each poll, until every bucket reached its end (with follow,
// until ctx ends). An error from emit or polled ends it; ErrStopPoll ends it
// with nil.
func PollRanges(ctx context.Context, s *client.LogScanner, ranges []BucketRange, follow bool,
	emit func(client.ScanRecord) error, polled func() error) error {
	ends := make(map[int32]int64, len(ranges))
	for _, r := range ranges {
		ends[r.Bucket] = r.End
		if err := s.Subscribe(r.Bucket, client.AtOffset(r.Start)); err != nil {
			return err
		}
	}
	for len(ends) > 0 {
		recs, err := s.Poll(ctx)
		if err != nil {
			return err
		}
		for _, r := range recs {
			end, ok := ends[r.Bucket]
			if !ok || (!follow && r.Offset >= end) {
				continue
			}
			if err := emit(r); err != nil {
				if errors.Is(err, ErrStopPoll) {
					return nil
				}
				return err
			}
		}
		if !follow {
			for b, end := range ends { // deleting while ranging is allowed
				if pos, ok := s.Position(b); ok && pos >= end {
					s.Unsubscribe(b)
					delete(ends, b)
				}
			}
		}
		if err := polled(); err != nil {
			return err
		}
	}
	return nil
}
