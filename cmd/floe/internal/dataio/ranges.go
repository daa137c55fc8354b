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
	// Partition is the bucket's partition in a partitioned table; "" in
	// one that is not.
	Partition  string
	Bucket     int32
	Start, End int64
}

// rangeKey names a range's bucket.
type rangeKey struct {
	partition string
	bucket    int32
}

// ResolveRanges finds where each bucket's read starts, at from, and without
// follow where it ends: the bucket's high watermark now, so that the read
// ends too. Buckets with nothing to read are left out (without follow).
// Each bucket's lookups are bounded by timeout. tbl is a table's handle, or
// a partition's (client.Table.Partition).
func ResolveRanges(ctx context.Context, tbl *client.Table, buckets []int32, from client.StartPosition, follow bool,
	timeout time.Duration) ([]BucketRange, error) {
	var out []BucketRange
	partition := ""
	if p := tbl.PartitionInfo(); p != nil {
		partition = p.Name
	}
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
		out = append(out, BucketRange{Partition: partition, Bucket: b, Start: start, End: end})
	}
	return out, nil
}

// PollOptions are what PollRanges does besides reading its ranges.
type PollOptions struct {
	// Follow reads on past the ranges' ends, until ctx ends.
	Follow bool
	// More, when set, is called before each poll: the ranges it returns
	// (of partitions created since, say) are read too. It decides itself
	// how often to look.
	More func(ctx context.Context) ([]BucketRange, error)
}

// PollRanges subscribes s to every range and polls it, handing emit each
// record below its bucket's end, in offset order within a bucket, and calling
// polled after each poll, until every bucket reached its end (with follow,
// until ctx ends). An error from emit or polled ends it; ErrStopPoll ends it
// with nil. s is the scanner of the ranges' table; ranges of partitions
// subscribe the partitions' buckets.
func PollRanges(ctx context.Context, s *client.LogScanner, ranges []BucketRange, o PollOptions,
	emit func(client.ScanRecord) error, polled func() error) error {
	ends := make(map[rangeKey]int64, len(ranges))
	subscribe := func(ranges []BucketRange) error {
		for _, r := range ranges {
			key := rangeKey{r.Partition, r.Bucket}
			if _, dup := ends[key]; dup {
				continue
			}
			ends[key] = r.End
			var err error
			if r.Partition != "" {
				err = s.SubscribePartition(ctx, r.Partition, r.Bucket, client.AtOffset(r.Start))
			} else {
				err = s.Subscribe(r.Bucket, client.AtOffset(r.Start))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := subscribe(ranges); err != nil {
		return err
	}
	for len(ends) > 0 || (o.Follow && o.More != nil) {
		if o.More != nil {
			more, err := o.More(ctx)
			if err != nil {
				return err
			}
			if err := subscribe(more); err != nil {
				return err
			}
		}
		if len(ends) == 0 {
			// Following a partitioned table with no partition yet.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pollIdle):
			}
			continue
		}
		recs, err := s.Poll(ctx)
		if errors.Is(err, client.ErrUnknownPartition) {
			// A partition was dropped under the read: the scanner ended
			// its subscriptions, and the read of the others goes on.
			for key := range ends {
				if _, ok := s.PartitionPosition(key.partition, key.bucket); key.partition != "" && !ok {
					delete(ends, key)
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		for _, r := range recs {
			end, ok := ends[rangeKey{r.Partition, r.Bucket}]
			if !ok || (!o.Follow && r.Offset >= end) {
				continue
			}
			if err := emit(r); err != nil {
				if errors.Is(err, ErrStopPoll) {
					return nil
				}
				return err
			}
		}
		if !o.Follow {
			for key, end := range ends { // deleting while ranging is allowed
				pos, ok := s.Position(key.bucket)
				if key.partition != "" {
					pos, ok = s.PartitionPosition(key.partition, key.bucket)
				}
				if ok && pos >= end {
					if key.partition != "" {
						s.UnsubscribePartition(key.partition, key.bucket)
					} else {
						s.Unsubscribe(key.bucket)
					}
					delete(ends, key)
				}
			}
		}
		if err := polled(); err != nil {
			return err
		}
	}
	return nil
}

// pollIdle is how long a follower of a table with nothing to read waits
// between looks for more.
const pollIdle = 200 * time.Millisecond
