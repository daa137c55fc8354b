package replication

import (
	"fmt"
	"slices"
	"time"
)

// Role is what a replica does for its bucket.
type Role int8

const (
	// RoleNone: offline, not yet told, or refusing a stale leadership.
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// Config configures a Bucket.
type Config struct {
	// Self is this node's id.
	Self uint32
	// ReplicaLagMax: an ISR follower not caught up for this long is
	// proposed out of the ISR. Required.
	ReplicaLagMax time.Duration
	// MinISR is min.insync.replicas (≥ 1).
	MinISR int
	// NodeEpoch is this node's registration index (its node epoch).
	// Metadata as of an index below it predates the registration: a wiped
	// or restarted node acting on it could lead an epoch it no longer holds
	// the log of. 0: not checked.
	NodeEpoch int64
}

// Assignment is what the committed metadata says of a bucket.
type Assignment struct {
	// Leader is the leading node, 0 when the bucket is offline.
	Leader      uint32
	LeaderEpoch int32
	BucketEpoch int32
	// Replicas in assignment order; ISR as committed.
	Replicas []uint32
	ISR      []uint32
	// Index is the metadata Raft index the assignment is as of, 0 when
	// unknown (then it is not checked against Config.NodeEpoch).
	Index int64
}

// Log is what the core is told of the replica's own log when it opens.
type Log struct {
	// HWCheckpoint is the last high watermark checkpointed to disk.
	HWCheckpoint int64
	// DurableEnd is the end of what the log holds durably.
	DurableEnd int64
	// LatestEpoch is the newest leader epoch in the log's epoch cache, -1
	// for none.
	LatestEpoch int32
}

// follower is what a leader knows of one follower in its epoch.
type follower struct {
	// end is the follower's durable end as of its last fetch in this
	// epoch, -1 until it fetched.
	end int64
	// leaderEndAtLastFetch and lastFetchAt: the leader's end and the time
	// of the follower's previous fetch (-1: none this epoch).
	leaderEndAtLastFetch int64
	lastFetchAt          time.Time
	// caughtUpAt is the last time the follower was caught up.
	caughtUpAt time.Time
	// nodeEpoch is the newest node epoch the follower fetched with, 0
	// when none was sent.
	nodeEpoch int64
}

// Bucket is the protocol state of one replica of one bucket. It is not
// safe for concurrent use: the caller serializes calls.
type Bucket struct {
	cfg Config

	role        Role
	leader      uint32
	leaderEpoch int32
	bucketEpoch int32
	replicas    []uint32
	isr         []uint32  // committed
	pending     *Proposal // proposed, outcome unknown; nil when none

	hw         int64
	durableEnd int64
	// logEpoch is the newest epoch the log held when the core opened, or
	// that this core led since: a leadership at or below it is stale (the
	// log may already hold batches of that epoch that others copied, and
	// this replica may have lost their unsynced tail on a restart).
	logEpoch int32
	// leadsSinceOpen: the core has led logEpoch itself since it opened.
	leadsSinceOpen bool
	// epochStart is the log end at which the current leader epoch began.
	epochStart int64
	// lostTailFrom is where the log lost its tail (LostTail), -1: it did
	// not, or the loss was cut away or forgotten.
	lostTailFrom int64
	followers    map[uint32]*follower
	nextID       uint64

	// Checked at every transition.
	lastHWEpoch int32
	lastHW      int64
}

// New returns the state of a replica whose log is l, in no role: an
// Assign gives it one. Its high watermark is min(checkpoint, durable end).
func New(cfg Config, l Log) *Bucket {
	assertf(cfg.Self != 0, "config without a node id")
	assertf(cfg.ReplicaLagMax > 0, "ReplicaLagMax %v", cfg.ReplicaLagMax)
	cfg.MinISR = max(cfg.MinISR, 1)
	b := &Bucket{cfg: cfg, leaderEpoch: -1, bucketEpoch: -1, logEpoch: l.LatestEpoch,
		hw: max(0, min(l.HWCheckpoint, l.DurableEnd)), durableEnd: l.DurableEnd, lastHWEpoch: -1, lostTailFrom: -1}
	b.check()
	return b
}

// Role returns the replica's role, leader and leader epoch.
func (b *Bucket) Role() (Role, uint32, int32) { return b.role, b.leader, b.leaderEpoch }

// HW is the high watermark.
func (b *Bucket) HW() int64 { return b.hw }

// BucketEpoch is the newest bucket epoch the replica knows.
func (b *Bucket) BucketEpoch() int32 { return b.bucketEpoch }

// ISR is the committed ISR as this replica knows it.
func (b *Bucket) ISR() []uint32 { return slices.Clone(b.isr) }

// Pending is the proposed ISR change, nil when none.
func (b *Bucket) Pending() *Proposal { return b.pending }

// Replicas are the assigned replicas.
func (b *Bucket) Replicas() []uint32 { return slices.Clone(b.replicas) }

// NodeEpoch is this node's registration index as the core knows it.
func (b *Bucket) NodeEpoch() int64 { return b.cfg.NodeEpoch }

// SetNodeEpoch records that the node registered again at index e: metadata
// as of an earlier index is ignored from now on. Node epochs only grow.
func (b *Bucket) SetNodeEpoch(e int64) {
	assertf(e >= b.cfg.NodeEpoch, "node epoch went back from %d to %d", b.cfg.NodeEpoch, e)
	b.cfg.NodeEpoch = e
}

// MinISR is min.insync.replicas.
func (b *Bucket) MinISR() int { return b.cfg.MinISR }

// SetMinISR changes min.insync.replicas (a table property change); it
// takes effect for the next write and every write still waiting.
func (b *Bucket) SetMinISR(n int) { b.cfg.MinISR = max(n, 1) }

// FollowerEnd is a follower's durable end as the leader knows it, -1 when
// it has not fetched in this epoch.
func (b *Bucket) FollowerEnd(id uint32) int64 {
	if f := b.followers[id]; f != nil {
		return f.end
	}
	return -1
}

// EpochStart is the offset the current leader epoch began at (leaders).
func (b *Bucket) EpochStart() int64 { return b.epochStart }

// String describes the state for logs and test failures.
func (b *Bucket) String() string {
	return fmt.Sprintf("node %d %s (leader %d, leader epoch %d, bucket epoch %d) isr %v pending %v hw %d durable end %d",
		b.cfg.Self, b.role, b.leader, b.leaderEpoch, b.bucketEpoch, b.isr, b.pending, b.hw, b.durableEnd)
}

// check asserts the invariants that hold after every transition.
func (b *Bucket) check() {
	assertf(b.hw >= 0, "negative high watermark %d", b.hw)
	if b.role == RoleLeader {
		assertf(b.hw <= b.durableEnd, "leader high watermark %d past its durable end %d", b.hw, b.durableEnd)
		if b.lastHWEpoch == b.leaderEpoch {
			assertf(b.hw >= b.lastHW, "high watermark moved back from %d to %d in leader epoch %d", b.lastHW, b.hw, b.leaderEpoch)
		}
		b.lastHWEpoch, b.lastHW = b.leaderEpoch, b.hw
		if b.pending != nil {
			assertf(b.pending.LeaderEpoch == b.leaderEpoch, "proposal of leader epoch %d pending in epoch %d", b.pending.LeaderEpoch, b.leaderEpoch)
		}
	} else {
		assertf(b.pending == nil, "ISR proposal pending on a %s", b.role)
	}
}
