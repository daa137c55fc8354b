package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/floedb/floe/client"
)

// errStopPoll ends pollRange early, without an error: a limit was reached.
var errStopPoll = errors.New("stop polling")

// parseBuckets reads a --buckets list of bucket numbers; "" is nil (all).
func parseBuckets(s string) ([]int32, error) {
	var out []int32
	for _, b := range splitList(s) {
		n, err := strconv.ParseInt(b, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: --buckets: %q is not a bucket number", errUsage, b)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// tableBuckets is buckets, checked against the table, or every bucket of the
// table when buckets is nil.
func tableBuckets(tbl *client.Table, buckets []int32) ([]int32, error) {
	if buckets == nil {
		for b := range tbl.Buckets() {
			buckets = append(buckets, b)
		}
		return buckets, nil
	}
	for _, b := range buckets {
		if b >= tbl.Buckets() {
			info := tbl.Info()
			return nil, fmt.Errorf("%w: --buckets: %s.%s has buckets 0 to %d, not %d", errUsage, info.Database, info.Name, tbl.Buckets()-1, b)
		}
	}
	return buckets, nil
}

// bucketRange is the part of a bucket's log a read covers: from start to
// below end (its high watermark when the read began; with follow, unbounded).
type bucketRange struct {
	bucket     int32
	start, end int64
}

// resolveRanges finds where each bucket's read starts, at from, and without
// follow where it ends: the bucket's high watermark now, so that the read
// ends too. Buckets with nothing to read are left out (without follow).
// Each bucket's lookups are bounded by timeout.
func resolveRanges(ctx context.Context, tbl *client.Table, buckets []int32, from client.StartPosition, follow bool,
	timeout time.Duration) ([]bucketRange, error) {
	var out []bucketRange
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
		out = append(out, bucketRange{bucket: b, start: start, end: end})
	}
	return out, nil
}

// pollRange subscribes s to every range and polls it, handing emit each
// record below its bucket's end, in offset order within a bucket, and calling
// polled after each poll, until every bucket reached its end (with follow,
// until ctx ends). An error from emit or polled ends it; errStopPoll ends it
// with nil.
func pollRange(ctx context.Context, s *client.LogScanner, ranges []bucketRange, follow bool,
	emit func(client.ScanRecord) error, polled func() error) error {
	ends := make(map[int32]int64, len(ranges))
	for _, r := range ranges {
		ends[r.bucket] = r.end
		if err := s.Subscribe(r.bucket, client.AtOffset(r.start)); err != nil {
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
				if errors.Is(err, errStopPoll) {
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
