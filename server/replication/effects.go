package replication

import (
	"fmt"
	"time"
)

// Effects is what the caller must do after a transition.
type Effects struct {
	// StartEpoch: the replica became leader; its log must start the
	// leader epoch (Bucket.Role) at its end before any write.
	StartEpoch bool
	// RoleChanged: the role, leader or leader epoch changed. Every write
	// waiting for the high watermark must look again (it fails with
	// ErrNotLeader), and fetchers re-target.
	RoleChanged bool
	// HWAdvanced: the high watermark moved up; writes waiting for it and
	// long-polling readers may proceed.
	HWAdvanced bool
	// ISRChanged: the committed ISR changed.
	ISRChanged bool
	// Propose: send this ISR change to the controller, and report its
	// outcome with ProposalOutcome.
	Propose *Proposal
	// StaleLeadership: the metadata named this replica leader at an epoch
	// its log already holds (a leader that restarted, or metadata older
	// than its registration). It does not lead; a newer epoch will come.
	StaleLeadership bool
	// StaleFollowership: the metadata named this replica follower at an
	// epoch older than the newest its log holds (metadata older than the
	// replica's own data). It does not follow; a newer epoch will come.
	StaleFollowership bool
	// StaleMetadata: the assignment was as of an index below the node's
	// registration and was ignored.
	StaleMetadata bool
}

// Merge folds o into e.
func (e *Effects) Merge(o Effects) {
	e.StartEpoch = e.StartEpoch || o.StartEpoch
	e.RoleChanged = e.RoleChanged || o.RoleChanged
	e.HWAdvanced = e.HWAdvanced || o.HWAdvanced
	e.ISRChanged = e.ISRChanged || o.ISRChanged
	e.StaleLeadership = e.StaleLeadership || o.StaleLeadership
	e.StaleMetadata = e.StaleMetadata || o.StaleMetadata
	e.StaleFollowership = e.StaleFollowership || o.StaleFollowership
	if o.Propose != nil {
		e.Propose = o.Propose
	}
}

// Proposal is an ISR change a leader asks the controller for, as a
// compare-and-set on the bucket epoch it knows. A retry sends the same
// proposal: the caller derives the request id from its fields (Key), so
// the controller answers a retry with the first attempt's result.
type Proposal struct {
	// ID numbers the proposals of one Bucket; outcomes name it.
	ID          uint64
	LeaderEpoch int32
	BucketEpoch int32
	ISR         []uint32
	// NodeEpochs are the node epochs of the ISR's members, in ISR order, as
	// the leader knows them: its own registration and the one each
	// follower last fetched with (0: unknown). The controller refuses to
	// add a member registered again since (KIP-903): the progress that
	// made it eligible belongs to an earlier run, maybe of a wiped disk.
	NodeEpochs []int64
	// Attempts so far (1 for the first send).
	Attempts int

	inFlight bool
	retryAt  time.Time
}

func (p *Proposal) String() string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("#%d isr %v at leader epoch %d bucket epoch %d", p.ID, p.ISR, p.LeaderEpoch, p.BucketEpoch)
}

// Key identifies the proposal's content: a request id built from it and the
// bucket is the same on every retry.
func (p *Proposal) Key() string {
	if len(p.NodeEpochs) == 0 {
		return fmt.Sprintf("isr:%d:%d:%v", p.LeaderEpoch, p.BucketEpoch, p.ISR)
	}
	return fmt.Sprintf("isr:%d:%d:%v:%v", p.LeaderEpoch, p.BucketEpoch, p.ISR, p.NodeEpochs)
}

// Outcome is how an AdjustIsr attempt ended.
type Outcome int8

const (
	// Committed: the controller answered with the bucket as committed.
	Committed Outcome = iota
	// Refused: the controller refused the change while the bucket was at
	// the proposal's epochs (invalid, or a member it adds is ineligible):
	// it was not and will not be applied.
	Refused
	// Unknown: no answer (timeout, lost reply, controller change); the
	// change may or may not be committed.
	Unknown
	// Fenced: the controller refused the attempt because the bucket had
	// moved on (a newer leader or bucket epoch). That tells nothing of the
	// proposal's own fate, even for what the leader sent once: the
	// transport retries a forwarded proposal under its request id, and a
	// copy that reaches a controller that has forgotten the id, after
	// another copy committed, is fenced by the epoch that commit raised.
	// The proposal stays pending, as for Unknown, until the metadata shows
	// the bucket past the proposal's epoch, which it will: the bucket moved.
	Fenced
)

// Retry pacing of proposals whose outcome is unknown.
const (
	proposalRetryMin = 100 * time.Millisecond
	proposalRetryMax = 2 * time.Second
)
