package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/transport/pb"
)

// callLeader runs fn against the leader of bucket, each attempt bounded by
// requestTimeout. Retriable errors, and attempts cut short by
// requestTimeout, are retried after fresh metadata and a backoff until ctx
// ends. For reads only: a retried call may run twice.
func (t *Table) callLeader(ctx context.Context, bucket int32, requestTimeout time.Duration, logger *slog.Logger,
	fn func(ctx context.Context, tablet pb.DRPCTabletClient) error) error {
	bo := newRetryBackoff()
	for attempt := 1; ; attempt++ {
		addr, version, err := t.leader(bucket)
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			err = fn(rctx, t.tablet(addr))
			cancel()
			if err == nil {
				return nil
			}
		}
		timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if !retriable(err) && !timedOut {
			return err
		}
		if ctx.Err() != nil || !t.retryAfter(ctx, version, &bo) {
			return fmt.Errorf("bucket %d: gave up after %d attempts: %w", bucket, attempt, errors.Join(ctx.Err(), err))
		}
		logger.Debug("call failed, retrying", "table", t.info.Name, "bucket", bucket, "attempt", attempt, "error", err)
	}
}

// retryAfter refreshes the metadata seen at version (unless done since) and
// backs off; false when ctx ended.
func (t *Table) retryAfter(ctx context.Context, version uint64, bo *backoff.Backoff) bool {
	_ = t.refreshAfter(ctx, version) // a failed refresh shows up as the next attempt's error
	return bo.Wait(ctx)
}
