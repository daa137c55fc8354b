package replica

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/fanout"
	"github.com/floedb/floe/internal/pkgerr"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

var errNoAddress = pkgerr.New("replica", "no address known for the leader node")

// Manager owns this node's bucket replicas. Its fields are grouped by
// what guards them; doc.go gives the order its locks are taken in.
type Manager struct {
	// Set by New, never changed.
	cfg Config
	log *slog.Logger
	// hw is the node's high-watermark checkpoint (hwcheckpoint.go), with
	// its own lock.
	hw   *hwCheckpoint
	zstd *record.Codec
	// logSched is the scheduler the Manager made for its replicas' logs
	// (cfg.Log.Scheduler), nil when the caller gave one.
	logSched *logstore.Scheduler
	// lake reads lake tables' data files for consumers (lake.go); nil
	// without a remote store.
	lake *lakeReader
	stop chan struct{} // closed when Close begins
	// catchUpSlots bounds the catch-up tasks running at once
	// (catchuptask.go): a task holds a slot while it runs.
	catchUpSlots chan struct{}

	// events counts what the replicas went through (metrics.go).
	// Lock-free.
	events events
	// throttle bounds what the learners of moves copy (throttle.go).
	throttle moveThrottle

	// followGen moves whenever a replica's role or leader may have
	// changed or a replica closed: fetchers list the replicas they fetch
	// for again only then, not on every round. Lock-free.
	followGen atomic.Uint64

	// mu guards the node's view of the metadata and the replicas and
	// fetchers it keeps for it.
	mu       sync.Mutex
	replicas map[BucketID]*Replica
	// tables holds what the replicas need of each table and partition,
	// by the id buckets are keyed by (a partition's own id); metas holds
	// each table's metadata, by table id, which a table and its
	// partitions share.
	tables map[uint64]*tableInfo
	metas  map[uint64]*tableMeta
	// partitions holds the known partitions by id, and partitionsOf their
	// ids by table id, so that a change of a table reaches its partitions.
	partitions   map[uint64]partitionRef
	partitionsOf map[uint64]map[uint64]struct{}
	// traffic holds each known table's counters (metrics.go), by table id,
	// kept while its metadata changes; a partition's count to its table.
	traffic map[uint64]*TableTraffic
	// unusable holds, per table or partition id, why this node cannot use
	// the table's metadata (an ErrUnusableTable); such an id has no entry
	// in tables.
	unusable  map[uint64]error
	nodes     map[uint32]*pb.NodeRecord
	nodeEpoch uint64
	fetchers  map[uint32]*fetcher // by leader node id
	// maxTableID is the largest table or partition id the metadata has
	// shown (both come from one counter).
	maxTableID uint64
	closed     bool

	// chMu guards changed alone, so replicas can notify while holding
	// their own lock.
	chMu    sync.Mutex
	changed chan struct{} // closed and replaced on any change a waiter may care about

	// wg counts the goroutines Close stops first: housekeeping and the
	// fetchers.
	wg sync.WaitGroup

	// bgMu orders goBackground with Close: no background work starts once
	// Close began waiting for it; bg counts that work.
	bgMu     sync.Mutex
	bgClosed bool
	bg       sync.WaitGroup
}

// New starts a manager with no replicas; Apply gives it some.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, replicas: map[BucketID]*Replica{}, tables: map[uint64]*tableInfo{},
		metas: map[uint64]*tableMeta{}, partitions: map[uint64]partitionRef{}, partitionsOf: map[uint64]map[uint64]struct{}{},
		unusable: map[uint64]error{}, traffic: map[uint64]*TableTraffic{},
		nodes: map[uint32]*pb.NodeRecord{}, fetchers: map[uint32]*fetcher{}, changed: make(chan struct{}), stop: make(chan struct{}),
		catchUpSlots: make(chan struct{}, catchUpConcurrency)}
	var err error
	if m.hw, err = loadHWCheckpoint(cfg.Dir); err != nil {
		m.log.Warn("high-watermark checkpoint unreadable: replicas start from lower high watermarks", "err", err)
	}
	codec, err := record.NewCodec(record.CodecConfig{MaxBatchBytes: min(cfg.MaxBatchBytes, record.MaxBatchSize)})
	if err != nil {
		return nil, err
	}
	m.zstd = codec
	if cfg.RemoteStore != nil {
		m.lake = newLakeReader(cfg.RemoteStore)
	}
	if cfg.Log.Scheduler == nil {
		if m.logSched, err = logstore.NewScheduler(logstore.SchedulerConfig{}); err != nil {
			codec.Close()
			return nil, err
		}
		m.cfg.Log.Scheduler = m.logSched
	}
	m.wg.Add(1)
	go m.housekeeping()
	return m, nil
}

// codec decompresses batch payloads.
func (m *Manager) codec() *record.Codec { return m.zstd }

// notify wakes everything waiting for a change (long polls, acks).
func (m *Manager) notify() {
	m.chMu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.chMu.Unlock()
}

// stopping reports whether Close has begun.
func (m *Manager) stopping() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

// changes returns the channel the next change closes.
func (m *Manager) changes() <-chan struct{} {
	m.chMu.Lock()
	defer m.chMu.Unlock()
	return m.changed
}

// replica returns the replica of a bucket, or nil.
func (m *Manager) replica(id BucketID) *Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replicas[id]
}

// nodeAddress returns a node's RPC address.
func (m *Manager) nodeAddress(id uint32) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.nodes[id]; n != nil {
		return n.RpcAddress
	}
	return ""
}

// NodeEpoch is this node's epoch as the metadata last said.
func (m *Manager) NodeEpoch() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodeEpoch
}

// Apply reconciles the replicas to a metadata update, in stream order:
// nodes and tables first, then the replicas of dropped tables go, a new
// node epoch reaches the open replicas, and every bucket of the update
// is applied.
func (m *Manager) Apply(u *pb.MetadataUpdate) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	oldEpoch := m.nodeEpoch
	if b := u.GetMoveBounds(); b != nil {
		m.throttle.set(b.GetThrottleBytesPerS())
	}
	m.applyNodesLocked(u)
	m.applyTablesLocked(u)
	drop := m.takeDroppedLocked(u)
	removed, orphans := m.takeRemovedLocked(u)
	m.mu.Unlock()

	m.deleteReplicas(drop)
	m.deleteRemoved(removed, orphans)
	m.spreadNodeEpoch(oldEpoch)
	// Buckets are independent: opening a new replica costs a few fsyncs
	// (its folder, its first segment, its epoch cache), so a table of a
	// thousand buckets opens them side by side.
	fanout.Each(lastPerBucket(u.Buckets), openConcurrency, func(b *pb.BucketRecord) { m.applyBucket(b, u.Index) })
	m.notify()
}

// applyNodesLocked records the update's nodes, and this node's epoch.
func (m *Manager) applyNodesLocked(u *pb.MetadataUpdate) {
	if u.Full {
		m.nodes = map[uint32]*pb.NodeRecord{}
	}
	for _, n := range u.Nodes {
		m.nodes[n.Id] = n
		if n.Id == m.cfg.NodeID {
			m.nodeEpoch = n.NodeEpoch
		}
	}
	for _, id := range u.DroppedNodes {
		delete(m.nodes, id)
	}
}

// partitionRef is what the manager keeps of a partition: its table and
// its name.
type partitionRef struct {
	table uint64
	name  string
}

// applyTablesLocked records the update's tables and partitions and hands
// the replicas of those already known their new metadata: a table's change
// reaches its partitions. A table whose metadata this build cannot use is
// marked unusable, with its partitions, unless it is already served: then
// it keeps its last usable metadata.
func (m *Manager) applyTablesLocked(u *pb.MetadataUpdate) {
	// Replicas exist only of tables and partitions known before: one pass
	// over the replicas serves every such one of the update, so an image
	// costs what the node holds, not tables times replicas.
	known := map[uint64]*tableInfo{}
	for _, t := range u.Tables {
		m.maxTableID = max(m.maxTableID, t.Id)
		meta, err := newTableMeta(t, m.cfg.KV)
		if err != nil {
			m.log.Error("unusable table metadata", "table", t.Id, "name", t.Database+"."+t.Name, "err", err)
			if m.metas[t.Id] == nil {
				m.unusable[t.Id] = err
				for id := range m.partitionsOf[t.Id] {
					m.unusable[id] = err
				}
			}
			continue
		}
		if kept := m.traffic[t.Id]; kept != nil {
			meta.traffic = kept
		} else {
			m.traffic[t.Id] = meta.traffic
		}
		m.metas[t.Id] = meta
		if meta.partitioned {
			delete(m.unusable, t.Id)
		} else {
			m.setTableLocked(meta.physical(t.Id, ""), known)
		}
		for id := range m.partitionsOf[t.Id] {
			m.setTableLocked(meta.physical(id, m.partitions[id].name), known)
		}
	}
	for _, p := range u.Partitions {
		m.maxTableID = max(m.maxTableID, p.Id)
		m.partitions[p.Id] = partitionRef{table: p.TableId, name: p.Name}
		of := m.partitionsOf[p.TableId]
		if of == nil {
			of = map[uint64]struct{}{}
			m.partitionsOf[p.TableId] = of
		}
		of[p.Id] = struct{}{}
		meta := m.metas[p.TableId]
		switch {
		case meta != nil && m.tables[p.Id] != nil && m.tables[p.Id].tableMeta == meta:
			// Known, and given the table's current metadata above.
		case meta != nil:
			m.setTableLocked(meta.physical(p.Id, p.Name), known)
		case m.unusable[p.TableId] != nil:
			m.unusable[p.Id] = m.unusable[p.TableId]
		default:
			m.log.Error("partition of an unknown table", "partition", p.Id, "table", p.TableId, "name", p.Name)
		}
	}
	if len(known) > 0 {
		for id, r := range m.replicas {
			if info := known[id.TableID]; info != nil {
				r.setTable(info)
			}
		}
	}
}

// setTableLocked records the metadata of a table or partition, and in
// known when its replicas may be open.
func (m *Manager) setTableLocked(info *tableInfo, known map[uint64]*tableInfo) {
	delete(m.unusable, info.id)
	if m.tables[info.id] != nil {
		known[info.id] = info
	}
	m.tables[info.id] = info
}

// takeDroppedLocked forgets the tables and partitions the update drops (a
// full image drops every one it does not list; a dropped table's
// partitions go with it) and takes their replicas out of the manager,
// returning them for deleteReplicas. A dropped partition is a dropped
// table to the replicas: its buckets are keyed by its own id.
func (m *Manager) takeDroppedLocked(u *pb.MetadataUpdate) []*Replica {
	dropped := map[uint64]bool{}
	for _, id := range u.DroppedTables {
		dropped[id] = true
	}
	for _, id := range u.DroppedPartitions {
		dropped[id] = true
	}
	if u.Full {
		live := make(map[uint64]bool, len(u.Tables)+len(u.Partitions))
		for _, t := range u.Tables {
			live[t.Id] = true
		}
		for _, p := range u.Partitions {
			live[p.Id] = true
		}
		for _, ids := range []iter.Seq[uint64]{maps.Keys(m.tables), maps.Keys(m.metas), maps.Keys(m.unusable), maps.Keys(m.partitions)} {
			for id := range ids {
				if !live[id] {
					dropped[id] = true
				}
			}
		}
	}
	var tables []uint64
	for id := range dropped {
		if len(m.partitionsOf[id]) > 0 {
			tables = append(tables, id)
		}
	}
	for _, id := range tables {
		for p := range m.partitionsOf[id] {
			dropped[p] = true
		}
	}
	for id := range dropped {
		m.maxTableID = max(m.maxTableID, id)
		delete(m.tables, id)
		delete(m.metas, id)
		delete(m.unusable, id)
		delete(m.traffic, id)
		delete(m.partitionsOf, id)
		if p, ok := m.partitions[id]; ok {
			delete(m.partitions, id)
			if of := m.partitionsOf[p.table]; of != nil {
				delete(of, id)
				if len(of) == 0 {
					delete(m.partitionsOf, p.table)
				}
			}
		}
	}
	var drop []*Replica
	if len(dropped) > 0 {
		for bid, r := range m.replicas {
			if dropped[bid.TableID] {
				drop = append(drop, r)
				delete(m.replicas, bid)
			}
		}
	}
	return drop
}

// maxDropLines bounds the lines one update's drops are logged in: a
// dropped table of many partitions is one line.
const maxDropLines = 8

// logDropped logs the tables and partitions whose replicas are deleted:
// each by name, or, past maxDropLines, how many.
func (m *Manager) logDropped(byID map[uint64]*tableInfo, replicas int) {
	if len(byID) > maxDropLines {
		tables := map[string]bool{}
		for _, info := range byID {
			tables[info.qualified()] = true
		}
		names := slices.Sorted(maps.Keys(tables))
		m.log.Info("tables or partitions dropped: deleting their replicas", "dropped", len(byID), "replicas", replicas,
			"tables", names[:min(len(names), maxDropLines)])
		return
	}
	for id, info := range byID {
		if info.partition != "" {
			m.log.Info("partition dropped: deleting its replicas", "table", info.qualified(), "partition", info.partition, "id", id)
		} else {
			m.log.Info("table dropped: deleting its replicas", "table", info.name, "id", id)
		}
	}
}

// deleteReplicas closes the replicas of dropped tables and partitions and
// deletes their data, then tells OnTableDropped of each table or partition
// once.
func (m *Manager) deleteReplicas(drop []*Replica) {
	if len(drop) == 0 {
		return
	}
	byID := map[uint64]*tableInfo{}
	for _, r := range drop {
		byID[r.id.TableID] = r.table()
	}
	m.logDropped(byID, len(drop))
	fanout.Each(drop, openConcurrency, func(r *Replica) {
		if err := r.close(true); err != nil {
			m.log.Error("delete replica", "bucket", r.id.String(), "name", r.table().name, "err", err)
		}
	})
	if m.cfg.OnTableDropped != nil {
		for id, info := range byID {
			m.cfg.OnTableDropped(id, info.name)
		}
	}
}

// takeRemovedLocked takes out of the manager the replicas this node no
// longer holds: those the update names removed from this node (a move
// completed or cancelled, a node removed), and, with a full image, every
// open replica of a bucket the image does not list this node a replica
// of. It returns them, and the folders of such buckets on disk that no
// replica has open (a removal this node missed while it was down), for
// deleteRemoved. The metadata is committed: a replica set without this
// node is final, and a node added again later starts from an empty log.
func (m *Manager) takeRemovedLocked(u *pb.MetadataUpdate) (removed []*Replica, orphans []string) {
	self := m.cfg.NodeID
	take := func(id BucketID) {
		if r := m.replicas[id]; r != nil {
			removed = append(removed, r)
			delete(m.replicas, id)
			return
		}
		if dir := Dir(m.cfg.Dir, id); dirExists(dir) {
			orphans = append(orphans, dir)
		}
	}
	for _, rr := range u.GetRemovedReplicas() {
		if slices.Contains(rr.GetNodes(), self) {
			take(BucketID{TableID: rr.GetTableId(), Bucket: rr.GetBucket()})
		}
	}
	if !u.GetFull() {
		return removed, orphans
	}
	held := map[BucketID]bool{}
	for _, b := range u.GetBuckets() {
		if slices.Contains(b.GetReplicas(), self) {
			held[BucketID{TableID: b.GetTableId(), Bucket: b.GetBucket()}] = true
		}
	}
	for id := range m.replicas {
		if !held[id] {
			take(id)
		}
	}
	entries, err := os.ReadDir(m.cfg.Dir)
	if err != nil {
		m.log.Warn("listing replica folders", "dir", m.cfg.Dir, "err", err)
		return removed, orphans
	}
	for _, e := range entries {
		var id BucketID
		if !e.IsDir() || !parseReplicaDir(e.Name(), &id) || held[id] || m.replicas[id] != nil {
			continue
		}
		orphans = append(orphans, filepath.Join(m.cfg.Dir, e.Name()))
	}
	return removed, orphans
}

// parseReplicaDir reads a replica folder's name (Dir) into id.
func parseReplicaDir(name string, id *BucketID) bool {
	if _, err := fmt.Sscanf(name, "t%d-b%d", &id.TableID, &id.Bucket); err != nil {
		return false
	}
	return name == filepath.Base(Dir("", *id)) // nothing before, after or in between
}

// dirExists reports whether dir is a folder.
func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// deleteRemoved closes the replicas this node no longer holds and deletes
// their data, and deletes the folders of such replicas no one had open
// (their KV stores go at the next start: kvreplica.Config.ReplicaKept).
func (m *Manager) deleteRemoved(removed []*Replica, orphans []string) {
	if len(removed) > 0 {
		m.log.Info("no longer a replica: deleting", "replicas", len(removed), "first", removed[0].id.String())
		fanout.Each(removed, openConcurrency, func(r *Replica) {
			if err := r.close(true); err != nil {
				m.log.Error("delete replica", "bucket", r.id.String(), "err", err)
			}
		})
	}
	for _, dir := range orphans {
		m.log.Info("deleting the folder of a replica this node no longer holds", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			m.log.Error("delete replica folder", "dir", dir, "err", err)
		}
	}
}

// spreadNodeEpoch gives the open replicas this node's epoch when it moved
// from old. A replica opened later takes the node epoch then.
func (m *Manager) spreadNodeEpoch(old uint64) {
	m.mu.Lock()
	nodeEpoch := m.nodeEpoch
	var reps []*Replica
	if nodeEpoch != old {
		reps = make([]*Replica, 0, len(m.replicas))
		for _, r := range m.replicas {
			reps = append(reps, r)
		}
	}
	m.mu.Unlock()
	for _, r := range reps {
		r.setNodeEpoch(nodeEpoch)
	}
}

// lastPerBucket returns the records of buckets, each bucket's last one
// only (the state it ends in), so no two of them are applied at once.
func lastPerBucket(buckets []*pb.BucketRecord) []*pb.BucketRecord {
	last := make(map[BucketID]int, len(buckets))
	for i, b := range buckets {
		last[BucketID{TableID: b.TableId, Bucket: b.Bucket}] = i
	}
	if len(last) == len(buckets) {
		return buckets
	}
	out := make([]*pb.BucketRecord, 0, len(last))
	for i, b := range buckets {
		if last[BucketID{TableID: b.TableId, Bucket: b.Bucket}] == i {
			out = append(out, b)
		}
	}
	return out
}

// openConcurrency bounds the buckets of one metadata update applied at
// once, and the replicas deleted or closed at once.
const openConcurrency = 16

// applyBucket opens the replica if this node holds the bucket and hands it
// the bucket's assignment as of metadata index index.
func (m *Manager) applyBucket(b *pb.BucketRecord, index uint64) {
	self := m.cfg.NodeID
	if !slices.Contains(b.Replicas, self) {
		return
	}
	id := BucketID{TableID: b.TableId, Bucket: b.Bucket}
	m.mu.Lock()
	r := m.replicas[id]
	info := m.tables[b.TableId]
	unusable := m.unusable[b.TableId] != nil
	m.mu.Unlock()
	if info == nil && unusable {
		return // logged when its metadata came
	}
	if info == nil {
		m.log.Error("bucket of an unknown table", "bucket", id.String())
		return
	}
	if r == nil {
		var err error
		if r, err = openReplica(m, id, info); err != nil {
			m.log.Error("cannot open replica", "bucket", id.String(), "err", err)
			return
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			r.close(false)
			return
		}
		m.replicas[id] = r
		m.mu.Unlock()
	}
	r.assign(b, index)
	r.reportLostTail()
	if r.isDamaged() {
		m.goBackground(r.repairDamage)
	}
	if b.Leader != 0 && b.Leader != self {
		m.ensureFetcher(b.Leader)
	}
}

// followedBy lists the replicas following leader.
func (m *Manager) followedBy(leader uint32) []*Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.followedByLocked(leader)
}

func (m *Manager) followedByLocked(leader uint32) []*Replica {
	var out []*Replica
	for _, r := range m.replicas {
		if role, l, _, _ := r.state(); role == replication.RoleFollower && l == leader {
			out = append(out, r)
		}
	}
	return out
}

// housekeeping checks ISRs and checkpoints high watermarks.
func (m *Manager) housekeeping() {
	defer m.wg.Done()
	isrTick := time.NewTicker(isrCheckInterval)
	defer isrTick.Stop()
	lastHW, lastISR := time.Now(), time.Time{}
	rounds := 0
	for {
		select {
		case <-m.stop:
			return
		case <-isrTick.C:
		}
		m.mu.Lock()
		reps := make([]*Replica, 0, len(m.replicas))
		for _, r := range m.replicas {
			reps = append(reps, r)
		}
		m.mu.Unlock()
		// Lag is looked for a few times per ReplicaLagMax, as Kafka does;
		// a proposal whose outcome is unknown is resent on every tick.
		full := time.Since(lastISR) >= max(isrCheckInterval, m.cfg.ReplicaLagMax/4)
		if full {
			lastISR = time.Now()
		}
		for _, r := range reps {
			if full || r.proposing.Load() {
				r.checkISR(time.Now())
			}
		}
		if time.Since(lastHW) >= hwCheckpointInterval {
			lastHW = time.Now()
			rounds++
			m.saveHWs(reps)
			if rounds%writerSnapInterval == 0 {
				for _, r := range reps {
					r.saveWriters()
				}
			}
		}
	}
}

// saveHWs checkpoints the high watermarks of reps, the node's replicas;
// the file is rewritten only when one moved or the set changed.
func (m *Manager) saveHWs(reps []*Replica) {
	hws := make(map[BucketID]int64, len(reps))
	for _, r := range reps {
		_, _, _, hws[r.id] = r.state()
	}
	if err := m.hw.save(hws); err != nil {
		m.log.Warn("high-watermark checkpoint", "err", err)
	}
}

// Close stops the fetchers and closes every replica.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	fetchers := m.fetchers
	m.fetchers = map[uint32]*fetcher{}
	reps := m.replicas
	m.replicas = map[BucketID]*Replica{}
	m.mu.Unlock()
	close(m.stop)
	for _, f := range fetchers {
		f.cancel()
	}
	m.wg.Wait()
	m.bgMu.Lock()
	m.bgClosed = true
	m.bgMu.Unlock()
	m.bg.Wait()
	// Each close checkpoints durably (a few fsyncs): side by side, a node
	// of many buckets stops in a fraction of the time.
	closed := slices.Collect(maps.Values(reps))
	var errMu sync.Mutex
	var err error
	fanout.Each(closed, openConcurrency, func(r *Replica) {
		if cerr := r.close(false); cerr != nil {
			errMu.Lock()
			err = errors.Join(err, cerr)
			errMu.Unlock()
		}
	})
	m.saveHWs(closed)
	if m.lake != nil {
		m.lake.closeAll()
	}
	if m.logSched != nil {
		err = errors.Join(err, m.logSched.Close())
	}
	m.zstd.Close()
	m.notify()
	return err
}

// untilStopped derives from parent a context that also ends when the
// manager closes, for background calls that must not outlive it.
func (m *Manager) untilStopped(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// goBackground runs f on a goroutine Close waits for and reports true;
// after Close it does not run f and reports false. f must return soon
// after m.stop closes.
func (m *Manager) goBackground(f func()) bool {
	m.bgMu.Lock()
	defer m.bgMu.Unlock()
	if m.bgClosed {
		return false
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		f()
	}()
	return true
}

// waitChange waits for any change or until ctx ends / deadline passes.
func (m *Manager) waitChange(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	case <-m.stop:
		return false
	}
}
