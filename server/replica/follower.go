package replica

import (
	"context"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// fetcher pulls, for every bucket this node follows on one leader node, the
// leader's new batches in one long-polling Fetch at a time.
type fetcher struct {
	m      *Manager
	leader uint32
	ctx    context.Context
	cancel context.CancelFunc
}

// ensureFetcher starts the fetcher for a leader node if none runs.
func (m *Manager) ensureFetcher(leader uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.fetchers[leader] != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, leader: leader, ctx: ctx, cancel: cancel}
	m.fetchers[leader] = f
	m.wg.Add(1)
	go f.run()
}

func (f *fetcher) run() {
	defer f.m.wg.Done()
	backoff := 50 * time.Millisecond
	for f.ctx.Err() == nil {
		reps := f.m.followedBy(f.leader)
		if len(reps) == 0 {
			// Nothing to follow on this leader any more: stop, unless a
			// bucket arrives meanwhile (ensureFetcher restarts us then).
			f.m.mu.Lock()
			if len(f.m.followedByLocked(f.leader)) == 0 {
				delete(f.m.fetchers, f.leader)
				f.m.mu.Unlock()
				return
			}
			f.m.mu.Unlock()
			continue
		}
		if err := f.fetchOnce(reps); err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.m.log.Debug("follower fetch failed", "leader", f.leader, "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-f.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// fetchOnce sends one Fetch for the given replicas and applies the answer.
func (f *fetcher) fetchOnce(reps []*Replica) error {
	addr := f.m.nodeAddress(f.leader)
	if addr == "" {
		return errNoAddress
	}
	req := &pb.FetchRequest{ReplicaId: f.m.cfg.NodeID, NodeEpoch: f.m.NodeEpoch(),
		MaxWaitMs: int32(DefaultFollowerMaxWait / time.Millisecond), MinBytes: 1, MaxBytes: maxFetchBytesTotal}
	byID := map[BucketID]*Replica{}
	epochs := map[BucketID]int32{}
	for _, r := range reps {
		_, _, epoch, _ := r.state()
		last := int32(-1)
		if e, ok := r.log.LatestEpoch(); ok {
			last = e
		}
		req.Buckets = append(req.Buckets, &pb.FetchBucket{TableId: r.id.TableID, Bucket: r.id.Bucket,
			Offset: r.log.EndOffset(), LeaderEpoch: epoch, LastFetchedEpoch: last, MaxBytes: DefaultFollowerFetchBytes})
		byID[r.id] = r
		epochs[r.id] = epoch
	}
	ctx, cancel := context.WithTimeout(f.ctx, DefaultFollowerMaxWait+5*time.Second)
	defer cancel()
	resp, err := f.m.cfg.Dialer.Tablet(addr).Fetch(ctx, req)
	if err != nil {
		return err
	}
	for _, fb := range resp.Buckets {
		id := BucketID{TableID: fb.TableId, Bucket: fb.Bucket}
		if r := byID[id]; r != nil {
			r.applyFetched(f.leader, epochs[id], fb)
		}
	}
	return nil
}

// applyFetched applies one bucket of a follower fetch: truncation on
// divergence, or the batches, then the follower's high watermark.
func (r *Replica) applyFetched(leader uint32, epoch int32, fb *pb.FetchedBucket) {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	role, curLeader, curEpoch, _ := r.state()
	if role != roleFollower || curLeader != leader || curEpoch != epoch {
		return // the role changed while the fetch was out
	}
	if fb.Error != "" {
		r.mgr.log.Debug("follower fetch refused", "bucket", r.id.String(), "leader", leader, "err", fb.Error)
		return
	}
	if fb.Diverging {
		to := fb.DivergingEndOffset
		if ep, end, ok := r.log.EndOffsetForEpoch(fb.DivergingEpoch); ok && ep <= fb.DivergingEpoch {
			to = min(to, end)
		}
		r.mgr.log.Info("truncating diverged log", "bucket", r.id.String(), "leader", leader, "to_offset", to,
			"end_offset", r.log.EndOffset(), "diverging_epoch", fb.DivergingEpoch)
		if err := r.log.Truncate(to); err != nil {
			r.mgr.log.Error("truncate", "bucket", r.id.String(), "err", err)
			return
		}
		if err := r.rebuildWriters(); err != nil {
			r.mgr.log.Error("rebuild writer state", "bucket", r.id.String(), "err", err)
		}
		if r.kv != nil {
			r.kv.DropAbove(r.log.EndOffset())
		}
		r.mu.Lock()
		r.hw = min(r.hw, r.log.EndOffset())
		r.mu.Unlock()
		return
	}
	if len(fb.Records) > 0 {
		if _, err := r.log.AppendReplicated(fb.Records); err != nil {
			r.mgr.log.Error("append replicated batches", "bucket", r.id.String(), "err", err)
			return
		}
		it := record.NewBatchIterator(fb.Records, false)
		for it.Next() {
			r.writers.record(it.Batch())
		}
	}
	r.mu.Lock()
	moved := false
	if hw := min(fb.HighWatermark, r.log.EndOffset()); hw > r.hw {
		r.hw, moved = hw, true
	}
	r.mu.Unlock()
	if moved && r.kv != nil {
		r.kv.HWMoved()
	}
}
