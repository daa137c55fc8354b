package meta

import (
	"context"
	"errors"
	"time"

	"github.com/floedb/floe/server/internal/metaimage"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// watchKeepalive is how often an idle metadata stream says it is alive;
// a watcher gives up on a stream after WatchIdle without a message.
const (
	watchKeepalive = time.Second
	WatchIdle      = 4 * watchKeepalive
)

// Bounds of what one metadata stream holds at a time: the changes it takes
// from the feed at once, and the part of an image one message carries (an
// image over it goes in parts). Either is at least one update or bucket.
const (
	watchBatchBytes     = 256 << 10
	watchImagePartBytes = 1 << 20
)

// watchMetadata serves the metadata stream from this node's state: a full
// image when the watcher starts from 0 or from further back than the state
// machine keeps changes, then each committed change in order, as it is
// applied here (a follower's stream lags its applied index, never skips).
// A watcher that names its node gets only the buckets the node holds a
// replica of; an image goes in parts of watchImagePartBytes, and the
// changes are taken watchBatchBytes at a time, so a watcher that falls
// behind holds no more than that (and one that falls behind the feed gets
// an image again).
//
// An idle stream carries a keepalive every watchKeepalive while this node
// is in contact with the Raft leader. A node that lost contact (paused,
// partitioned, between leaders) ends the stream instead: its view may be
// stale for as long as it stays cut off, and the watcher should follow a
// meta node that is current. A paused node sends nothing at all, and the
// watcher's idle timeout moves it on.
func (r *Role) watchMetadata(req *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	n := r.node.Load()
	if n == nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is not part of a cluster yet", r.cfg.NodeID)
	}
	ctx := stream.Context()
	state := n.State()
	sent := req.FromIndex
	for {
		applied := state.AppliedIndex()
		updates, ok := state.ChangesFor(sent, req.NodeId, watchBatchBytes)
		if !ok || sent == 0 {
			img, err := state.ImageFor(req.NodeId)
			if err != nil {
				return err
			}
			for _, part := range metaimage.Split(img, watchImagePartBytes) {
				if err := stream.Send(part); err != nil {
					return err
				}
			}
			sent = img.Index
			continue
		}
		for _, u := range updates {
			if err := stream.Send(u); err != nil {
				return err
			}
			sent = u.Index
		}
		if len(updates) > 0 {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, watchKeepalive)
		_, err := state.WaitApplied(wctx, max(applied, sent))
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			if !n.InContact() {
				return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
					"meta node %d lost contact with the metadata leader; its view may be stale", r.cfg.NodeID)
			}
			if err := stream.Send(&pb.MetadataUpdate{Index: sent, Keepalive: true}); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
}
