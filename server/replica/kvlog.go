package replica

import (
	"context"
	"errors"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/replication"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// What the KV side of a primary-key bucket replica (KV) may use of its log
// replica: read the log below the high watermark, append through the
// leader's write path, and wait for changes. Nothing here changes the
// replica's role, epochs or high watermark.

// ID names the replica's bucket.
func (r *Replica) ID() BucketID { return r.id }

// Dir is the replica's folder; the KV side keeps its store inside.
func (r *Replica) Dir() string { return r.dir }

// Codec decompresses batch payloads.
func (r *Replica) Codec() *record.Codec { return r.mgr.codec() }

// HighWatermark is the replica's high watermark: every offset below it is
// committed.
func (r *Replica) HighWatermark() int64 {
	_, _, _, hw := r.state()
	return hw
}

// StartOffset and EndOffset bound the replica's log.
func (r *Replica) StartOffset() int64 { return r.log.StartOffset() }
func (r *Replica) EndOffset() int64   { return r.log.EndOffset() }

// ReadBelow reads durable batches of the log from offset from, below
// offset below, up to about maxBytes. Damage a leader meets starts the
// repair (damage.go), as a consumer's read does. A follower's does not: its
// fetches in flight still claim the damaged range, and one answered after
// the report could bring it back into the ISR before it cut the damage
// away; it is repaired when it leads and reads the range.
func (r *Replica) ReadBelow(from, below int64, maxBytes int) (*logstore.Records, error) {
	recs, err := r.log.ReadBelow(from, below, maxBytes)
	var ce *logstore.CorruptError
	if errors.As(err, &ce) {
		if role, _, _, _ := r.state(); role == replication.RoleLeader {
			r.noteDamage(ce)
		}
	}
	return recs, err
}

// SyncLog makes everything appended to the log durable.
func (r *Replica) SyncLog() error { return r.log.Sync() }

// LeaderEpoch returns the replica's leader epoch, or NOT_LEADER when it
// does not lead.
func (r *Replica) LeaderEpoch() (int32, error) { return r.leaderFor(AcksLeader) }

// AppendLogFunc appends the log form of a write in the write's leader
// epoch and records it in the writer table.
type AppendLogFunc func(record.Batch) (logstore.AppendInfo, error)

// Write runs a leader write of client batch b in its turn (TakeTurn),
// whose log form derive builds and appends, once, with appendLog: under
// the write's lock it checks leadership and b's writer sequence (a retried
// batch is answered with its first offsets, derive not called), then
// answers per acks.
func (r *Replica) Write(ctx context.Context, turn *Turn, b record.Batch, acks int32, timeout time.Duration,
	derive func(epoch int32, appendLog AppendLogFunc) error) (*pb.ProduceResponse, error) {
	return r.write(ctx, turn, b, acks, timeout, func(epoch int32) (logstore.AppendInfo, func() error, error) {
		var info logstore.AppendInfo
		var wait func() error
		err := derive(epoch, func(batch record.Batch) (logstore.AppendInfo, error) {
			if wait != nil {
				return logstore.AppendInfo{}, pkgerr.New("replica", "a write appends one batch")
			}
			appended, w, err := r.log.AppendPending(batch, epoch)
			if err != nil {
				return appended, WireError(err)
			}
			r.writers.table.record(batch)
			info, wait = appended, w
			return appended, nil
		})
		if err == nil && wait == nil {
			err = pkgerr.New("replica", "a write returned without appending")
		}
		return info, wait, err
	})
}

// AppendBarrier appends a control batch in the current leader epoch and
// waits, up to timeout, until it commits. It returns the barrier's offset
// and the epoch it committed in.
func (r *Replica) AppendBarrier(ctx context.Context, timeout time.Duration) (int64, int32, error) {
	bld := record.NewBatchBuilder(record.BatchOptions{SchemaID: int16(r.table().schemaID), Format: record.PayloadControl}, 0)
	if err := bld.Append(record.AppendOnly, []byte{byte(record.ControlBarrier)}); err != nil {
		return 0, 0, err
	}
	b, err := bld.Build()
	if err != nil {
		return 0, 0, err
	}
	r.produceMu.Lock()
	epoch, err := r.leaderFor(AcksLeader)
	if err != nil {
		r.produceMu.Unlock()
		return 0, 0, err
	}
	info, wait, err := r.log.AppendPending(b, epoch)
	r.produceMu.Unlock()
	if err != nil {
		return 0, 0, WireError(err)
	}
	if _, err := r.finishAppend(ctx, info, wait, AcksAll, epoch, timeout); err != nil {
		return 0, 0, err
	}
	return info.LastOffset, epoch, nil
}

// Changes returns the channel the node's next change closes (a high
// watermark, a role, a store catching up); Notify closes it.
func (r *Replica) Changes() <-chan struct{} { return r.mgr.changes() }
func (r *Replica) Notify()                  { r.mgr.notify() }

// WaitChange waits until ch closes, ctx ends, deadline passes or the node
// stops; it reports whether ch closed.
func (r *Replica) WaitChange(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	return r.mgr.waitChange(ctx, ch, deadline)
}
