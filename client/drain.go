package client

import (
	"context"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// DrainResult is what DrainNode did.
type DrainResult struct {
	// Node is the node after the drain (Draining set, unless undrained).
	Node Node `json:"node"`
	// Buckets lists every bucket the node led.
	Buckets []BucketDrain `json:"buckets"`
	// Unchanged: the node was already draining and nothing could move (or,
	// for UndrainNode, it was not draining).
	Unchanged bool `json:"unchanged"`
}

// BucketDrain is one bucket's outcome of DrainNode.
type BucketDrain struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	// Bucket is the bucket after the drain.
	Bucket Bucket `json:"bucket"`
	// Moved: its leadership went to Bucket.Leader at Bucket.LeaderEpoch.
	Moved bool `json:"moved"`
	// Err says why it did not move: a *transport.Error with code
	// NOT_ENOUGH_REPLICAS (no other live in-sync replica).
	Err error `json:"-"`
	// Reason is Err's text, for JSON output.
	Reason string `json:"reason,omitempty"`
}

// NotMoved counts the buckets whose leadership stayed on the node.
func (r *DrainResult) NotMoved() int {
	n := 0
	for _, b := range r.Buckets {
		if !b.Moved {
			n++
		}
	}
	return n
}

// DrainNode moves every bucket leadership off tablet node id before a
// planned stop: each bucket it leads gets the first other live in-sync
// replica (in assignment order) as leader, with new leader and bucket
// epochs; never a replica outside the ISR. A bucket without another live
// in-sync replica keeps its leader and is listed with the reason; the call
// still succeeds. The node is marked draining: until it registers again
// (its next start) or UndrainNode, elections pass it over while another
// replica may lead, so leaderships do not come back to it before it stops.
// UNKNOWN_NODE for a node that is not registered, INVALID_REQUEST for one
// that is not a tablet node.
func (a *Admin) DrainNode(ctx context.Context, id uint32) (*DrainResult, error) {
	return a.drain(ctx, id, false)
}

// UndrainNode clears a node's draining mark (DrainNode) without moving any
// leadership back; `ElectLeaders` of a table then makes preferred replicas
// lead again.
func (a *Admin) UndrainNode(ctx context.Context, id uint32) (*DrainResult, error) {
	return a.drain(ctx, id, true)
}

// DecommissionNode drains a node (DrainNode) and marks it
// decommissioning: the controller moves every replica it holds to other
// nodes (as `floe cluster rebalance` would place them, under the cluster's
// move throttle and bound), and new tables are not placed on it. The mark
// outlives restarts; once the node holds no replica it can be stopped and
// removed (RemoveNode). UndrainNode cancels it; moves running go on.
func (a *Admin) DecommissionNode(ctx context.Context, id uint32) (*DrainResult, error) {
	return a.drainNode(ctx, &pb.DrainNodeRequest{NodeId: id, Decommission: true})
}

func (a *Admin) drain(ctx context.Context, id uint32, cancel bool) (*DrainResult, error) {
	return a.drainNode(ctx, &pb.DrainNodeRequest{NodeId: id, Cancel: cancel})
}

func (a *Admin) drainNode(ctx context.Context, req *pb.DrainNodeRequest) (*DrainResult, error) {
	req.RequestId = newRequestID()
	var resp *pb.DrainNodeResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.DrainNode(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &DrainResult{Node: nodeFromPB(resp.Node, resp.Alive), Buckets: []BucketDrain{}, Unchanged: resp.Unchanged}
	for _, e := range resp.Buckets {
		d := BucketDrain{Database: e.Database, Table: e.Table, Bucket: bucketFromPB(e.Bucket), Moved: e.Moved}
		if !e.Moved {
			d.Err = &transport.Error{Code: e.Code, Message: e.Error}
			d.Reason = d.Err.Error()
		}
		out.Buckets = append(out.Buckets, d)
	}
	return out, nil
}
