package tablet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

const (
	// lakeTick paces the lake loop's look at its tasks.
	lakeTick = time.Second
	// minLakeRoundEvery bounds how often one task runs a round.
	minLakeRoundEvery = time.Second
	// lakeRoundTimeout bounds one round; one cut short is redone.
	lakeRoundTimeout = 10 * time.Minute
	// lakeMaxRecords bounds the records one round reads from a bucket,
	// so a bucket far behind catches up over several versions.
	lakeMaxRecords = 1 << 20
)

// lakeTables keeps, from the metadata stream, the lake-enabled tables
// with a task of this node: what the lake loop runs.
type lakeTables struct {
	mu     sync.Mutex
	tables map[uint64]*pb.TableRecord
	// collected is when this node last collected a table's garbage (the
	// lake loop's alone).
	collected map[uint64]time.Time
	// cataloged is the version the REST catalog last took of a table
	// (the lake loop's alone).
	cataloged map[uint64]int64
}

// note applies a metadata update: a full image replaces the tables, a
// change adds, replaces or drops them.
func (l *lakeTables) note(self uint32, u *pb.MetadataUpdate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tables == nil || u.GetFull() { // an image lists every table
		l.tables = map[uint64]*pb.TableRecord{}
	}
	for _, t := range u.GetTables() {
		delete(l.tables, t.GetId())
		for _, task := range t.GetLake().GetTasks() {
			if task.GetNodeId() == self {
				l.tables[t.GetId()] = t
				break
			}
		}
	}
	for _, id := range u.GetDroppedTables() {
		delete(l.tables, id)
	}
}

// mine lists the tables with a task of this node.
func (l *lakeTables) mine() []*pb.TableRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*pb.TableRecord, 0, len(l.tables))
	for _, t := range l.tables {
		out = append(out, t)
	}
	return out
}

// lakeLoop runs the rounds of this node's lake tasks (docs/lake.md): each
// task at least twice per datalake.freshness, one round at a time, until
// ctx ends.
func (r *Role) lakeLoop(ctx context.Context) {
	t := time.NewTicker(lakeTick)
	defer t.Stop()
	last := map[string]time.Time{} // by table, task and epoch
	// indexes keeps each table's lake index of its last round, whose
	// manifests the next round's needs not read again.
	indexes := map[uint64]*lake.Index{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tables := r.lake.mine()
		for id := range indexes {
			if !slices.ContainsFunc(tables, func(t *pb.TableRecord) bool { return t.GetId() == id }) {
				delete(indexes, id) // no task here any more
			}
		}
		for _, tbl := range tables {
			props, err := metastate.TableProperties(tbl)
			if err != nil || !props.DataLake {
				continue
			}
			every := max(props.DataLakeFreshness/2, minLakeRoundEvery)
			for _, task := range tbl.GetLake().GetTasks() {
				if task.GetNodeId() != r.cfg.NodeID {
					continue
				}
				key := fmt.Sprintf("%d/%d/%d", tbl.GetId(), task.GetIndex(), task.GetEpoch())
				if time.Since(last[key]) < every {
					continue
				}
				last[key] = time.Now()
				rctx, cancel := context.WithTimeout(ctx, lakeRoundTimeout)
				res, err := r.lakeRound(rctx, tbl, task, indexes[tbl.GetId()])
				cancel()
				if res.Index != nil {
					indexes[tbl.GetId()] = res.Index
				}
				attrs := []any{"table", tbl.GetDatabase() + "." + tbl.GetName(), "task", task.GetIndex()}
				switch {
				case errors.Is(err, lake.ErrFenced):
					r.log.Info("lake: a round's commit was fenced; the next reads the lake again", append(attrs, "err", err)...)
				case err != nil && ctx.Err() == nil:
					r.log.Warn("lake: round failed", append(attrs, "err", err)...)
				case err == nil && res.Files > 0:
					r.log.Debug("lake: version committed", append(attrs, "version", res.Version, "files", res.Files, "records", res.Records,
						"merged", res.Compacted)...)
				}
				if err == nil && res.Full {
					delete(last, key) // behind: the next round at the next tick
				}
			}
		}
	}
}

// lakeRound runs one round of a task: it reads the table, its lake and
// its buckets as the metadata leader holds them now, and tiers the
// task's buckets past their lake offsets. A task no longer this node's at
// that epoch does nothing.
func (r *Role) lakeRound(ctx context.Context, tbl *pb.TableRecord, task *pb.LakeTask, prev *lake.Index) (lake.RoundResult, error) {
	resp, err := r.getTable(ctx, tbl.GetDatabase(), tbl.GetName(), "")
	if err != nil {
		return lake.RoundResult{}, err
	}
	t := resp.GetTable()
	if t.GetId() != tbl.GetId() {
		return lake.RoundResult{}, nil // dropped and created again: the new table has tasks of its own
	}
	st := t.GetLake()
	mine := r.sameTask(st, task)
	if mine == nil {
		return lake.RoundResult{}, nil
	}
	versions, err := replica.SchemaVersions(t)
	if err != nil {
		return lake.RoundResult{}, err
	}
	props, err := metastate.TableProperties(t)
	if err != nil {
		return lake.RoundResult{}, err
	}
	round := lake.Round{Table: lake.NewTable(r.cfg.Remote, st.GetPrefix()), Schemas: map[int32]record.Schema{},
		PartitionBy: t.GetPartitionKeys(), TableUUID: st.GetTableUuid(), Version: st.GetVersion(), MetadataKey: st.GetMetadataKey(),
		MaxRecords: lakeMaxRecords, NowMs: time.Now().UnixMilli(), Retention: props.DataLakeRetention, Index: prev}
	for _, v := range versions {
		round.Schemas[v.ID] = record.Schema{Columns: v.Schema.Columns, PrimaryKey: t.GetPrimaryKey()}
		round.CurrentID = v.ID
	}
	src := &fetchSource{r: r, addrs: map[uint32]string{}, leaders: map[lakeBucket]uint32{}, schemas: round.Schemas,
		primaryKey: len(t.GetPrimaryKey()) > 0}
	add := func(resp *pb.GetTableResponse, physical uint64, partition []lake.PartitionValue) {
		for _, n := range resp.GetNodes() {
			src.addrs[n.GetId()] = n.GetRpcAddress()
		}
		for _, b := range resp.GetBuckets() {
			if b.GetBucket() < mine.GetFirstBucket() || b.GetBucket() >= mine.GetEndBucket() {
				continue
			}
			if b.GetRemoteFenceEpoch() != 0 {
				// An unclean election's new history: the bucket waits for
				// its leader's cut, which may lower its lake offset
				// (replication.md's Lake 4).
				continue
			}
			ref := lake.BucketRef{PhysicalID: physical, Bucket: b.GetBucket(), Partition: partition}
			src.leaders[lakeBucket{physical, b.GetBucket()}] = b.GetLeader()
			round.Buckets = append(round.Buckets, lake.Offset{Bucket: ref, Offset: b.GetLakeOffset()})
		}
	}
	if len(t.GetPartitionKeys()) == 0 {
		add(resp, t.GetId(), nil)
	} else {
		current := versions[len(versions)-1].Schema
		for _, p := range resp.GetPartitions() {
			presp, err := r.getTable(ctx, t.GetDatabase(), t.GetName(), p.GetName())
			if err != nil {
				if errors.Is(err, transport.ErrUnknownTable) {
					continue // dropped meanwhile
				}
				return lake.RoundResult{}, err
			}
			values, err := lakePartitionValues(current, t.GetPartitionKeys(), p.GetValues())
			if err != nil {
				return lake.RoundResult{}, err
			}
			add(presp, p.GetId(), values)
		}
	}
	round.Reload = func(ctx context.Context) (int64, string, error) {
		resp, err := r.getTable(ctx, t.GetDatabase(), t.GetName(), "")
		if err != nil {
			return 0, "", err
		}
		now := resp.GetTable()
		if now.GetId() != t.GetId() {
			return 0, "", fmt.Errorf("%w: the table was dropped", lake.ErrFenced)
		}
		if r.sameTask(now.GetLake(), mine) != nil {
			return now.GetLake().GetVersion(), now.GetLake().GetMetadataKey(), nil
		}
		return 0, "", fmt.Errorf("%w: lake task %d is no longer this node's at epoch %d", lake.ErrFenced, mine.GetIndex(), mine.GetEpoch())
	}
	if round.Version > 0 && mine.GetIndex() == 0 {
		// A committed version whose publish failed is published here,
		// even if no round commits after it (a quiet table).
		if published, err := round.Table.EnsurePublished(ctx, int(round.Version), round.MetadataKey); err != nil {
			r.log.Warn("lake: publishing the committed version", "table", t.GetDatabase()+"."+t.GetName(), "version", round.Version, "err", err)
		} else if published {
			r.log.Info("lake: published a committed version its round had not", "table", t.GetDatabase()+"."+t.GetName(), "version", round.Version)
		}
	}
	res, err := lake.RunRound(ctx, round, src, lakeCommitter{r: r, table: t, task: mine})
	for _, o := range res.Rebuilt {
		r.log.Info("lake: rebuilt a primary-key bucket's lake from its leader's store after an unclean election",
			"table", t.GetDatabase()+"."+t.GetName(), "physical", o.Bucket.PhysicalID, "bucket", o.Bucket.Bucket, "offset", o.Offset)
	}
	if err == nil && res.MetadataKey != "" && mine.GetIndex() == 0 {
		r.collectLakeGarbage(ctx, t, round.Table, res.MetadataKey)
	}
	if cat := r.cfg.LakeCatalog; cat != nil && mine.GetIndex() == 0 {
		version, key := round.Version, round.MetadataKey
		if err == nil && res.MetadataKey != "" {
			version, key = res.Version, res.MetadataKey
		}
		r.syncLakeCatalog(ctx, cat, t, round.Table, version, key)
	}
	return res, err
}

// syncLakeCatalog moves the table's entry in the REST catalog to the
// committed version (published by path), once per version; a failed sync
// is tried again by the next round (task 0's node does it for the table).
func (r *Role) syncLakeCatalog(ctx context.Context, cat *lake.RESTCatalog, t *pb.TableRecord, lt *lake.Table, version int64, key string) {
	if version <= 0 || r.lake.cataloged[t.GetId()] == version {
		return
	}
	name := t.GetDatabase() + "." + t.GetName()
	m, err := lt.ReadStaged(ctx, key)
	if err == nil {
		var changed bool
		if changed, err = cat.Sync(ctx, t.GetDatabase(), t.GetName(), lt.VersionURI(int(version)), m); err == nil {
			if r.lake.cataloged == nil {
				r.lake.cataloged = map[uint64]int64{}
			}
			r.lake.cataloged[t.GetId()] = version
			if changed {
				r.log.Info("lake: the REST catalog's table is at the committed version", "table", name, "version", version, "catalog", cat.String())
			}
			return
		}
	}
	r.log.Warn("lake: syncing the REST catalog", "table", name, "version", version, "catalog", cat.String(), "err", err)
}

// collectLakeGarbage deletes, at most once per lake.DefaultGarbageGrace,
// the files of a table's lake that the version this node just committed
// does not reference (task 0's node does it for the table).
func (r *Role) collectLakeGarbage(ctx context.Context, t *pb.TableRecord, lt *lake.Table, key string) {
	if r.lake.collected == nil {
		r.lake.collected = map[uint64]time.Time{}
	}
	if time.Since(r.lake.collected[t.GetId()]) < lake.DefaultGarbageGrace {
		return
	}
	r.lake.collected[t.GetId()] = time.Now()
	m, err := lt.ReadStaged(ctx, key)
	if err == nil {
		var n int
		if n, err = lt.CollectGarbage(ctx, m, key, time.Now(), lake.DefaultGarbageGrace); err == nil && n > 0 {
			r.log.Info("lake: garbage collected", "table", t.GetDatabase()+"."+t.GetName(), "objects", n)
		}
	}
	if err != nil {
		r.log.Warn("lake: collecting garbage", "table", t.GetDatabase()+"."+t.GetName(), "err", err)
	}
}

// sameTask finds task in st still this node's at its epoch; nil when it
// is not.
func (r *Role) sameTask(st *pb.LakeState, task *pb.LakeTask) *pb.LakeTask {
	for _, tk := range st.GetTasks() {
		if tk.GetIndex() == task.GetIndex() && tk.GetNodeId() == r.cfg.NodeID && tk.GetEpoch() == task.GetEpoch() {
			return tk
		}
	}
	return nil
}

// getTable reads a table (or one of its partitions) on the metadata
// leader.
func (r *Role) getTable(ctx context.Context, database, table, partition string) (*pb.GetTableResponse, error) {
	var resp *pb.GetTableResponse
	err := r.deps.Meta.Call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.GetTable(ctx, &pb.GetTableRequest{Database: database, Name: table, Partition: partition})
		return err
	})
	return resp, err
}

// lakeCommitter commits a task's lake versions through the metadata
// leader.
type lakeCommitter struct {
	r     *Role
	table *pb.TableRecord
	task  *pb.LakeTask
}

// Commit proposes the commit, retrying what may be retried with the same
// request id; FENCED is lake.ErrFenced.
func (c lakeCommitter) Commit(ctx context.Context, expected int64, key string, offsets []lake.Offset) error {
	commit := &pb.CommitLake{Database: c.table.GetDatabase(), Name: c.table.GetName(), TableId: c.table.GetId(),
		Task: c.task.GetIndex(), NodeId: c.r.cfg.NodeID, TaskEpoch: c.task.GetEpoch(), ExpectedVersion: expected, MetadataKey: key}
	for _, o := range offsets {
		commit.Offsets = append(commit.Offsets, &pb.LakeOffset{PhysicalId: o.Bucket.PhysicalID, Bucket: o.Bucket.Bucket, Offset: o.Offset})
	}
	req := &pb.CommitLakeRequest{RequestId: fmt.Appendf(nil, "lake/%d/%d/%s", c.table.GetId(), c.task.GetIndex(), key), Commit: commit}
	err := c.r.commitWithRetry(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.CommitLake(ctx, req)
		return err
	})
	if errors.Is(err, transport.ErrFenced) {
		return fmt.Errorf("%w: %v", lake.ErrFenced, err)
	}
	return err
}
