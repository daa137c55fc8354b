package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// ElectOptions shape ElectLeaders.
type ElectOptions struct {
	// Bucket limits the election to one bucket; nil: every bucket.
	Bucket *int32
	// Partition names the partition whose buckets to elect in a
	// partitioned table, which needs it ("dt=2026-12-03").
	Partition string
	// Unclean lets a bucket without a live in-sync replica take a live
	// replica from outside the ISR as its leader: the bucket serves again,
	// but whatever only the old in-sync replicas held is lost. Counted in
	// the bucket's UncleanElections.
	Unclean bool
}

// Election is one bucket's outcome of ElectLeaders.
type Election struct {
	// Bucket is the bucket after the election.
	Bucket Bucket `json:"bucket"`
	// Elected: the bucket got a new leader, Bucket.Leader at
	// Bucket.LeaderEpoch; Unclean: from outside the ISR.
	Elected bool `json:"elected"`
	Unclean bool `json:"unclean,omitempty"`
	// Err says why the bucket got no new leader: a *transport.Error with
	// code ALREADY_EXISTS (its first live in-sync replica leads already) or
	// NOT_ENOUGH_REPLICAS (no live replica it may elect).
	Err error `json:"-"`
	// Reason is Err's text, for JSON output.
	Reason string `json:"reason,omitempty"`
	// Ranking is an unclean election's live replicas, best first: the
	// first leads. See Why.
	Ranking []ElectionCandidate `json:"ranking,omitempty"`
}

// ElectionCandidate is a live replica an unclean election ranked: the one
// whose log holds the latest leader epoch first, of those the longest log,
// then assignment order; a replica whose node did not report its log after
// every one that did, and a draining one last.
type ElectionCandidate struct {
	Node uint32 `json:"node"`
	// LogKnown: the node reported the replica's log, LatestEpoch (-1: none)
	// and EndOffset.
	LogKnown    bool  `json:"log_known"`
	LatestEpoch int32 `json:"latest_epoch"`
	EndOffset   int64 `json:"end_offset"`
	Draining    bool  `json:"draining,omitempty"`
}

// Why says why an unclean election chose its leader, "" for any other:
// "node 2: log ends at 1200 in epoch 7; node 1: 900 in epoch 7".
func (e Election) Why() string {
	var b strings.Builder
	for i, c := range e.Ranking {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "node %d: ", c.Node)
		switch {
		case !c.LogKnown:
			b.WriteString("log unknown (no answer)")
		case i == 0:
			fmt.Fprintf(&b, "log ends at %d", c.EndOffset)
		default:
			fmt.Fprintf(&b, "%d", c.EndOffset)
		}
		if c.LogKnown {
			if c.LatestEpoch < 0 {
				b.WriteString(" in no epoch")
			} else {
				fmt.Fprintf(&b, " in epoch %d", c.LatestEpoch)
			}
		}
		if c.Draining {
			b.WriteString(" (draining)")
		}
	}
	return b.String()
}

// ElectLeaders elects bucket leaders of a table. A clean election makes each
// bucket's first live in-sync replica (in assignment order) its leader:
// leadership goes back to the preferred replica, and an offline bucket whose
// in-sync replica returned serves again. With Unclean, a bucket without a
// live in-sync replica takes a live replica from outside the ISR: the one
// whose log holds the latest leader epoch, of those the longest
// (Election.Why says which).
//
// The result lists every bucket tried. The call fails when no bucket got a
// leader, with the first bucket's reason; for a table or bucket that does not
// exist, with UNKNOWN_DATABASE or UNKNOWN_TABLE.
func (a *Admin) ElectLeaders(ctx context.Context, database, table string, opts ElectOptions) ([]Election, error) {
	req := &pb.ElectLeadersRequest{RequestId: newRequestID(), Database: database, Table: table,
		Bucket: opts.Bucket, Unclean: opts.Unclean, Partition: opts.Partition}
	var resp *pb.ElectLeadersResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ElectLeaders(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Election, 0, len(resp.Buckets))
	for _, e := range resp.Buckets {
		el := Election{Bucket: bucketFromPB(e.Bucket), Elected: e.Elected, Unclean: e.Unclean}
		for _, c := range e.Candidates {
			el.Ranking = append(el.Ranking, ElectionCandidate{Node: c.NodeId, LogKnown: c.LogKnown,
				LatestEpoch: c.LatestEpoch, EndOffset: c.EndOffset, Draining: c.Draining})
		}
		if !e.Elected {
			el.Err = &transport.Error{Code: e.Code, Message: e.Error}
			el.Reason = el.Err.Error()
		}
		out = append(out, el)
	}
	return out, nil
}
