package chaos

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestMoveLogReconcile: a move's end is read from the bucket's replicas
// once it no longer runs, and an unanswered start counts only once the
// cluster shows it began.
func TestMoveLogReconcile(t *testing.T) {
	b0 := bucketRef{"chaos", "log", 0}
	orig, target := []uint32{1, 2, 3}, []uint32{4, 2, 1}
	for _, tc := range []struct {
		name   string
		unsure bool
		moving map[bucketRef]*openMove
		now    []uint32
		want   MoveResult
		open   bool
		err    error
	}{
		{name: "still running", moving: map[bucketRef]*openMove{b0: {original: orig, target: target}},
			now: []uint32{4, 2, 1, 3}, want: MoveResult{Started: 1}, open: true},
		{name: "completed", now: []uint32{4, 2, 1}, want: MoveResult{Started: 1, Completed: 1}},
		{name: "completed, leader order aside", now: []uint32{1, 2, 4}, want: MoveResult{Started: 1, Completed: 1}},
		{name: "cancelled", now: orig, want: MoveResult{Started: 1, Cancelled: 1}},
		{name: "unanswered, never began", unsure: true, now: orig},
		{name: "unanswered, seen running", unsure: true, moving: map[bucketRef]*openMove{b0: {original: orig, target: target}},
			now: []uint32{4, 2, 1, 3}, want: MoveResult{Started: 1}, open: true},
		{name: "unanswered, seen done", unsure: true, now: target, want: MoveResult{Started: 1, Completed: 1}},
		{name: "ended elsewhere", now: []uint32{2, 3, 4}, want: MoveResult{Started: 1}, err: errMoveEndedElsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ml := newMoveLog()
			ml.started(b0, orig, target, tc.unsure)
			err := ml.reconcile(tc.moving, placement{b0: tc.now}, NewHistory())
			if !errors.Is(err, tc.err) || ml.result() != tc.want || ml.isOpen(b0) != tc.open {
				t.Fatalf("err %v, %+v, open %v; want %v, %+v, open %v", err, ml.result(), ml.isOpen(b0), tc.err, tc.want, tc.open)
			}
		})
	}
}

// TestMoveLogAdoptsAMoveItDidNotStart: a move running that the log has
// no record of (a start whose answer was lost and that the log already
// closed as never begun) opens as started and is followed to its end.
func TestMoveLogAdoptsAMoveItDidNotStart(t *testing.T) {
	kv := bucketRef{"chaos", "kv", 0}
	ml := newMoveLog()
	h := NewHistory()
	running := map[bucketRef]*openMove{kv: {original: []uint32{1, 2, 3}, target: []uint32{2, 3, 4}}}
	if err := ml.reconcile(running, placement{kv: {2, 3, 4, 1}}, h); err != nil || !ml.isOpen(kv) {
		t.Fatalf("err %v, open %v", err, ml.isOpen(kv))
	}
	if err := ml.reconcile(nil, placement{kv: {2, 3, 4}}, h); err != nil {
		t.Fatal(err)
	}
	if got := ml.result(); got != (MoveResult{Started: 1, Completed: 1}) {
		t.Fatalf("%+v", got)
	}
}

// TestMoveCallFate: refusals and missing answers are what faults cause
// and never end the run; a call naming what does not exist is the
// harness's mistake.
func TestMoveCallFate(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want moveCallFate
	}{
		{transport.Errorf(pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "table 1 bucket 0 is moving already"), moveRefused},
		{transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "node 4 in the target is draining"), moveRefused},
		{transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "none of the original replicas is in sync"), moveRefused},
		{fmt.Errorf("move: %w", transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "no leader")), moveUnanswered},
		{transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, ""), moveUnanswered},
		{context.DeadlineExceeded, moveUnanswered},
		{transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "chaos.nope"), moveMisaimed},
		{transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node 9"), moveMisaimed},
	} {
		if got := fateOf(tc.err); got != tc.want {
			t.Errorf("%v: fate %d, want %d", tc.err, got, tc.want)
		}
	}
}
