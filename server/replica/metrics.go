package replica

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// What the node's metrics (server/metrics.go) read of its replicas. The
// counters are bumped once per request or batch, never per record, and
// read at scrape time; the gauges are computed only then, from the
// replicas' state (TableGauges).

// TableTraffic counts what a table's replicas on this node took in from
// writers and served to readers since the table became known here. Each
// table has one, shared by its replicas, its partitions' included (a
// dropped partition's counts stay in its table's); the counters only grow.
type TableTraffic struct {
	// BytesIn and RecordsIn: batches appended or upserted by this node's
	// leaders, as the client sent them (retries answered as duplicates
	// are not counted again).
	BytesIn, RecordsIn atomic.Int64
	// BytesOut and RecordsOut: records served to consumers (fetches of
	// the local log) and rows answered to lookups, prefix lookups and
	// row scans. Follower fetches are replication, not counted.
	BytesOut, RecordsOut atomic.Int64
}

func (t *TableTraffic) noteIn(batch []byte) {
	if len(batch) < record.HeaderSize {
		return
	}
	t.BytesIn.Add(int64(len(batch)))
	t.RecordsIn.Add(int64(record.Batch(batch).RecordCount()))
}

func (t *TableTraffic) noteOut(bytes, records int) {
	if bytes == 0 && records == 0 {
		return
	}
	t.BytesOut.Add(int64(bytes))
	t.RecordsOut.Add(int64(records))
}

// noteServed counts a consumer's fetch answer in its tables' traffic;
// follower fetches are replication and do not count.
func (m *Manager) noteServed(req *pb.FetchRequest, resp *pb.FetchResponse) {
	if req.ReplicaId != 0 {
		return
	}
	var t *TableTraffic
	var tableID uint64
	for _, b := range resp.Buckets {
		if len(b.Records) == 0 {
			continue
		}
		if t == nil || b.TableId != tableID {
			t, tableID = nil, b.TableId
			m.mu.Lock()
			if info := m.tables[tableID]; info != nil {
				t = info.traffic
			}
			m.mu.Unlock()
		}
		if t != nil {
			t.noteOut(len(b.Records), recordsIn(b.Records))
		}
	}
}

// recordsIn counts the records of the whole batches laid end to end in
// data, reading only their headers.
func recordsIn(data []byte) int {
	n := 0
	for len(data) >= record.HeaderSize {
		size, ok := record.PeekSize(data)
		if !ok || size > len(data) {
			break
		}
		n += int(record.Batch(data).RecordCount())
		data = data[size:]
	}
	return n
}

// rowCount is the rows of a lookup answer: one size per key, 0 for an
// absent key.
func rowCount(sizes []uint32) int {
	n := 0
	for _, s := range sizes {
		if s > 0 {
			n++
		}
	}
	return n
}

// Events counts what this node's replicas went through since it started.
type Events struct {
	// ISRShrinks and ISRExpands: ISR changes of buckets led here, as the
	// leader learned them committed (its own proposals and the
	// controller's changes alike).
	ISRShrinks, ISRExpands int64
	// LeaderElections: leader epochs this node's replicas started
	// leading. Each change of a bucket's leader counts once in the
	// cluster, on its new leader.
	LeaderElections int64
	// MoveBytes: bytes the replicas a move added copied while they were
	// learners, from their leaders and from remote storage (a KV
	// snapshot's restore not included).
	MoveBytes int64
}

// events are the Manager's counters behind Events.
type events struct {
	isrShrinks, isrExpands, leaderElections, moveBytes atomic.Int64
}

// Events returns the node's replica event counts.
func (m *Manager) Events() Events {
	return Events{ISRShrinks: m.events.isrShrinks.Load(), ISRExpands: m.events.isrExpands.Load(),
		LeaderElections: m.events.leaderElections.Load(), MoveBytes: m.events.moveBytes.Load()}
}

// noteISRLocked counts a change of the ISR from before to the core's
// current one, on a leader; r.mu is held.
func (r *Replica) noteISRLocked(before int) {
	if !r.leadingLocked() {
		return
	}
	switch after := len(r.core.ISR()); {
	case after < before:
		r.mgr.events.isrShrinks.Add(1)
	case after > before:
		r.mgr.events.isrExpands.Add(1)
	}
}

// TableGauges is what one table's replicas on this node show at one
// moment, its partitions' included: a partition is not a series of its own,
// or a day-partitioned table kept a year would be hundreds.
type TableGauges struct {
	TableID uint64
	// Name is database.table.
	Name    string
	Traffic *TableTraffic
	// Leaders and Followers count the table's buckets this node leads and
	// follows.
	Leaders, Followers int
	// UnderReplicated: led buckets whose ISR is smaller than their
	// replica set. BelowMinISR: led buckets whose ISR is below the
	// table's min.insync.replicas (acks=all writes are refused).
	UnderReplicated, BelowMinISR int
	// MaxFollowerLagRecords is the largest gap, in records, between a
	// led bucket's log end and the end a follower of it fetched up to.
	MaxFollowerLagRecords int64
	// LogBytes is the size of the table's local logs on this node.
	LogBytes int64
	// TieringLagRecords: records below the led buckets' high watermarks
	// not in their committed remote logs yet (with tiering only; the
	// active segment is uploaded once it rolls).
	TieringLagRecords int64
	// KVSnapshotAge is the age of the oldest newest-snapshot among the
	// led primary-key buckets that have one; BucketsWithoutKVSnapshot
	// counts those that have none (with remote storage only).
	KVSnapshotAge            time.Duration
	HasKVSnapshot            bool
	BucketsWithoutKVSnapshot int
}

// TableGauges walks the node's replicas and returns, per table, what they
// show now. It takes each replica's lock briefly: it is meant for a
// scrape, not a hot path.
func (m *Manager) TableGauges(now time.Time) []TableGauges {
	m.mu.Lock()
	reps := make([]*Replica, 0, len(m.replicas))
	for _, r := range m.replicas {
		reps = append(reps, r)
	}
	byTable := make(map[uint64]*TableGauges, len(m.metas))
	for id, meta := range m.metas {
		byTable[id] = &TableGauges{TableID: id, Name: meta.qualified(), Traffic: meta.traffic}
	}
	m.mu.Unlock()
	tiered := m.cfg.RemoteStore != nil
	for _, r := range reps {
		g := byTable[r.table().tableID]
		if g == nil {
			continue // dropped meanwhile
		}
		g.LogBytes += r.log.Size()
		r.mu.Lock()
		role, _, _, hw := r.stateLocked()
		if role == replication.RoleLeader {
			r.leaderGaugesLocked(g, hw)
		}
		r.mu.Unlock()
		switch role {
		case replication.RoleLeader:
			g.Leaders++
			if tiered {
				g.TieringLagRecords += max(0, hw-r.tieredEnd())
				if r.kv != nil {
					noteSnapshotAge(g, r.newestKVSnapshot(), now)
				}
			}
		case replication.RoleFollower:
			g.Followers++
		}
	}
	out := make([]TableGauges, 0, len(byTable))
	for _, g := range byTable {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b TableGauges) int { return cmp.Compare(a.TableID, b.TableID) })
	return out
}

// leaderGaugesLocked adds a led bucket's ISR and follower lag to g; r.mu
// is held.
func (r *Replica) leaderGaugesLocked(g *TableGauges, hw int64) {
	isr, replicas := r.core.ISR(), r.core.Replicas()
	if len(isr) < len(replicas) {
		g.UnderReplicated++
	}
	if len(isr) < r.core.MinISR() {
		g.BelowMinISR++
	}
	end := max(r.log.WrittenEnd(), hw)
	for _, id := range replicas {
		// A follower that has not fetched in this epoch (-1) has no lag
		// known; it is out of the ISR, which UnderReplicated shows.
		if fetched := r.core.FollowerEnd(id); id != r.mgr.cfg.NodeID && fetched >= 0 {
			g.MaxFollowerLagRecords = max(g.MaxFollowerLagRecords, end-fetched)
		}
	}
}

// tieredEnd is where the bucket's committed remote log ends; the local
// log's start when there is none.
func (r *Replica) tieredEnd() int64 {
	if rl := r.remote.log.Load(); rl != nil {
		return rl.EndOffset
	}
	return r.log.StartOffset()
}

func noteSnapshotAge(g *TableGauges, s *pb.KVSnapshot, now time.Time) {
	if s == nil {
		g.BucketsWithoutKVSnapshot++
		return
	}
	age := max(0, now.Sub(time.UnixMilli(s.CreatedMs)))
	if !g.HasKVSnapshot || age > g.KVSnapshotAge {
		g.KVSnapshotAge, g.HasKVSnapshot = age, true
	}
}
