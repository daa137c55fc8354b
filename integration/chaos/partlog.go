package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/client"
)

// The partitioned log workload (LogWorkload.Partitioned): the log table
// is partitioned by a day, dt STRING NOT NULL, and each writer appends
// every row to a day drawn among the live ones. While it runs, churn
// opens a new day every churnInterval, creating its partition first half
// the time (CreatePartition) and otherwise leaving it to the first writer
// that meets the value (partition.dynamic-create), and closes the oldest
// live day: writers no longer pick it. A closed day is kept to the end
// and checked, or dropped at once, while writes to it may still be in
// flight, or kept while an older closed day, which no writer writes to,
// is dropped instead; the first day closed is always dropped. The records
// of a dropped day are excluded from the checks: their data is gone by
// design, and a row racing the drop may have made the partition again
// (docs/partitions.md). Every other partition is checked per partition
// and bucket as a table's buckets are, and the partitions seen during the
// run and gone at the end must have left no folder on any node.

const (
	// liveDays is how many days writers write to at once.
	liveDays = 3
	// churnInterval is how often a day opens and the oldest live one
	// closes: a CI run of 4 s of faults closes a few, the first dropped.
	churnInterval = time.Second
	// partitionCallTimeout bounds one create, drop or list call of the
	// churn: faults make them hang.
	partitionCallTimeout = 5 * time.Second
	// dropSettleTimeout bounds the retries, once the faults are healed,
	// of the drops that failed under them.
	dropSettleTimeout = time.Minute
)

// firstDay is the day of the first partition.
var firstDay = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// dayPartition is the partition name of a day's value.
func dayPartition(day string) string { return "dt=" + day }

// dayPlan is the partitioned workload's calendar (the days writers write
// to, those closed and kept, those retired: dropped) and what the churn
// saw and did. Safe for concurrent use.
type dayPlan struct {
	mu      sync.Mutex
	opened  int             // days handed out by next: day i is firstDay + i days
	live    []string        // values writers pick from, oldest first
	kept    []string        // closed days not dropped, oldest first
	retired map[string]bool // by partition name
	// pending are retired partitions whose drop has not succeeded yet.
	pending []string
	// seen is every partition listed during the run, by id.
	seen        map[uint64]client.PartitionInfo
	callsFailed int
}

func newDayPlan() *dayPlan {
	return &dayPlan{retired: map[string]bool{}, seen: map[uint64]client.PartitionInfo{}}
}

// next is the value of the next day, not live yet.
func (p *dayPlan) next() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	day := firstDay.AddDate(0, 0, p.opened).Format(time.DateOnly)
	p.opened++
	return day
}

// open makes a day live: writers pick it from now on.
func (p *dayPlan) open(day string) {
	p.mu.Lock()
	p.live = append(p.live, day)
	p.mu.Unlock()
}

// close takes the oldest live day out of the writers' picks once more
// than liveDays are live; the caller keeps or retires it.
func (p *dayPlan) close() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.live) <= liveDays {
		return "", false
	}
	day := p.live[0]
	p.live = slices.Delete(p.live, 0, 1)
	return day, true
}

// keep keeps a closed day to the end.
func (p *dayPlan) keep(day string) {
	p.mu.Lock()
	p.kept = append(p.kept, day)
	p.mu.Unlock()
}

// oldestKept takes the oldest kept day out of the kept ones.
func (p *dayPlan) oldestKept() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.kept) == 0 {
		return "", false
	}
	day := p.kept[0]
	p.kept = slices.Delete(p.kept, 0, 1)
	return day, true
}

// retire marks a closed day's partition to drop, returning its name:
// its records are excluded from the checks from now on.
func (p *dayPlan) retire(day string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := dayPartition(day)
	p.retired[name] = true
	p.pending = append(p.pending, name)
	return name
}

// pick draws a live day.
func (p *dayPlan) pick(rng *rand.Rand) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[rng.IntN(len(p.live))]
}

// liveDay is the i-th oldest live day (modulo how many are live).
func (p *dayPlan) liveDay(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[i%len(p.live)]
}

// isRetired says whether a partition's day was retired.
func (p *dayPlan) isRetired(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retired[name]
}

// pendingDrops are the retired partitions whose drop has not succeeded.
func (p *dayPlan) pendingDrops() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pending)
}

// dropped records a drop that succeeded.
func (p *dayPlan) dropped(name string) {
	p.mu.Lock()
	p.pending = slices.DeleteFunc(p.pending, func(n string) bool { return n == name })
	p.mu.Unlock()
}

// failed counts a create, drop or list call that failed.
func (p *dayPlan) failed() {
	p.mu.Lock()
	p.callsFailed++
	p.mu.Unlock()
}

// saw records a listing of the partitions.
func (p *dayPlan) saw(parts []client.PartitionInfo) {
	p.mu.Lock()
	for _, pi := range parts {
		p.seen[pi.ID] = pi
	}
	p.mu.Unlock()
}

// PartitionResult counts what the partitioned log workload did to its
// partitions; zero for a table that is not partitioned.
type PartitionResult struct {
	// Explicit and OnWrite count the partitions listed during the run
	// by how they were made: CreatePartition, or a writer meeting a new
	// value.
	Explicit int `json:"explicit"`
	OnWrite  int `json:"on_write"`
	// Dropped: partitions listed during the run and gone at the end,
	// whose folders no node may keep.
	Dropped int `json:"dropped"`
	// Recreated: partitions of a retired day at the end, which a row
	// racing the drop made again (their records are read, and checked
	// for duplicates and order, not for losses).
	Recreated int `json:"recreated"`
	// CallsFailed: create, drop and list calls that failed under the
	// faults (a failed drop is retried until it succeeds).
	CallsFailed int `json:"calls_failed"`
}

// result sums up the churn given the partitions at the end.
func (p *dayPlan) result(final []bucketSet) PartitionResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := PartitionResult{CallsFailed: p.callsFailed}
	alive := map[uint64]bool{}
	for _, s := range final {
		alive[s.id] = true
		if p.retired[s.partition] {
			r.Recreated++
		}
	}
	for id, pi := range p.seen {
		switch pi.Origin {
		case "explicit":
			r.Explicit++
		case "on-write":
			r.OnWrite++
		}
		if !alive[id] {
			r.Dropped++
		}
	}
	return r
}

// droppedSets are the partitions seen during the run and gone at the end
// (final): every replica list empty, as no node may keep their data.
func (p *dayPlan) droppedSets(final []bucketSet, buckets int32) []replicaSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	alive := map[uint64]bool{}
	for _, s := range final {
		alive[s.id] = true
	}
	var out []replicaSet
	for id, pi := range p.seen {
		if !alive[id] {
			out = append(out, replicaSet{partition: pi.Name, id: id, dropped: true, replicas: make([][]uint32, buckets)})
		}
	}
	slices.SortFunc(out, func(a, b replicaSet) int { return cmp.Compare(a.id, b.id) })
	return out
}

// setUpDays creates the first day's partition (explicitly) and makes it
// and the next two live; writers create those two as they meet them.
func (w *LogWorkload) setUpDays(ctx context.Context) error {
	w.days = newDayPlan()
	first := w.days.next()
	if _, err := w.cl.Admin().CreatePartition(ctx, w.Database, w.Table, dayPartition(first)); err != nil {
		return err
	}
	w.days.open(first)
	for range liveDays - 1 {
		w.days.open(w.days.next())
	}
	return nil
}

// churn opens a day and closes the oldest live one every churnInterval
// until ctx ends: a closed day is dropped (the first always, then one in
// six), or kept while the oldest kept one is dropped (one in six), or
// kept: about two thirds of the records written are checked.
func (w *LogWorkload) churn(ctx context.Context, h *History) {
	rng := rand.New(rand.NewPCG(w.Seed, 0xda7e))
	first := true
	for pause(ctx, jitter(rng, churnInterval)) {
		if _, err := w.listPartitions(ctx); err != nil {
			w.days.failed()
		}
		w.retryDrops(ctx, h)
		day := w.days.next()
		if rng.IntN(2) == 0 {
			w.createPartition(ctx, h, dayPartition(day))
		}
		w.days.open(day)
		closed, ok := w.days.close()
		if !ok {
			continue
		}
		switch draw := rng.IntN(6); {
		case first || draw == 0:
			w.dropPartition(ctx, h, w.days.retire(closed))
		case draw == 1:
			w.days.keep(closed)
			if old, ok := w.days.oldestKept(); ok {
				w.dropPartition(ctx, h, w.days.retire(old))
			}
		default:
			w.days.keep(closed)
		}
		first = false
	}
}

// listPartitions lists the table's partitions and records them as seen.
func (w *LogWorkload) listPartitions(ctx context.Context) ([]client.PartitionInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, partitionCallTimeout)
	defer cancel()
	parts, err := w.tbl.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	w.days.saw(parts)
	return parts, nil
}

// createPartition creates a day's partition before any writer meets it;
// when that fails the first writer that does creates it.
func (w *LogWorkload) createPartition(ctx context.Context, h *History, name string) {
	cctx, cancel := context.WithTimeout(ctx, partitionCallTimeout)
	defer cancel()
	if _, err := w.cl.Admin().CreatePartition(cctx, w.Database, w.Table, name, client.IfNotExists()); err != nil {
		w.days.failed()
		h.Fault(fmt.Sprintf("create partition %s: failed, writers will: %v", name, err))
		return
	}
	h.Fault("create partition " + name)
}

// dropPartition drops a retired day's partition; a drop that fails stays
// pending and is tried again.
func (w *LogWorkload) dropPartition(ctx context.Context, h *History, name string) {
	cctx, cancel := context.WithTimeout(ctx, partitionCallTimeout)
	defer cancel()
	if err := w.cl.Admin().DropPartition(cctx, w.Database, w.Table, name, client.IfExists()); err != nil {
		w.days.failed()
		h.Fault(fmt.Sprintf("drop partition %s: failed, tried again: %v", name, err))
		return
	}
	w.days.dropped(name)
	h.Fault("drop partition " + name)
}

// retryDrops tries the pending drops again.
func (w *LogWorkload) retryDrops(ctx context.Context, h *History) {
	for _, name := range w.days.pendingDrops() {
		w.dropPartition(ctx, h, name)
	}
}

// settlePartitions, once the faults are healed and the writers stopped,
// drops the retired partitions whose drop failed under the faults and
// lists the partitions a last time.
func (w *LogWorkload) settlePartitions(ctx context.Context, h *History) error {
	if !w.Partitioned {
		return nil
	}
	deadline := time.Now().Add(dropSettleTimeout)
	for {
		w.retryDrops(ctx, h)
		left := w.days.pendingDrops()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) || !pause(ctx, 500*time.Millisecond) {
			return fmt.Errorf("chaos: partitions %v not dropped %v after the faults were healed", left, dropSettleTimeout)
		}
	}
	_, err := w.listPartitions(ctx)
	return err
}

// partitionsReader subscribes every bucket of every partition there is.
func (w *LogWorkload) partitionsReader(ctx context.Context) (*logReader, error) {
	// A handle of its own: the writers' may keep handles of partitions
	// dropped since.
	rt, err := w.cl.Table(ctx, w.Database, w.Table)
	if err != nil {
		return nil, err
	}
	parts, err := rt.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	w.days.saw(parts)
	sc, err := rt.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	r := &logReader{sc: sc, schema: rt.Schema(), ends: map[setBucket]int64{}, ids: map[string]uint64{}}
	for _, p := range parts {
		pt, err := rt.Partition(ctx, p.Name)
		if err != nil {
			return r, err
		}
		r.ids[p.Name] = pt.ID()
		for b := range pt.Buckets() {
			if r.ends[setBucket{pt.ID(), b}], err = pt.ListOffset(ctx, b, client.Latest()); err != nil {
				return r, err
			}
			if err := sc.SubscribePartition(ctx, p.Name, b, client.Earliest()); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

// bucketSet is the buckets of the log table, or of one of its
// partitions, as the metadata lists them.
type bucketSet struct {
	partition string // "": the table
	id        uint64 // what its buckets are keyed by
	buckets   []client.Bucket
}

// placement lists the log table's buckets (of each partition there is).
func (w *LogWorkload) placement(ctx context.Context) ([]bucketSet, error) {
	if !w.Partitioned {
		desc, err := w.cl.Admin().DescribeTable(ctx, w.Database, w.Table)
		if err != nil {
			return nil, err
		}
		return []bucketSet{{id: desc.ID, buckets: desc.Placement}}, nil
	}
	rt, err := w.cl.Table(ctx, w.Database, w.Table) // fresh: no cached partition handles
	if err != nil {
		return nil, err
	}
	parts, err := rt.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]bucketSet, 0, len(parts))
	for _, p := range parts {
		pt, err := rt.Partition(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, bucketSet{partition: p.Name, id: pt.ID(), buckets: pt.Info().Placement})
	}
	return out, nil
}

// replicaSets are the sets' replicas by bucket, then, of a partitioned
// table, the partitions dropped during the run.
func (w *LogWorkload) replicaSets(sets []bucketSet) []replicaSet {
	var out []replicaSet
	for _, s := range sets {
		rs := replicaSet{partition: s.partition, id: s.id, replicas: make([][]uint32, w.Buckets)}
		for _, b := range s.buckets {
			if b.Bucket >= 0 && b.Bucket < w.Buckets {
				rs.replicas[b.Bucket] = b.Replicas
			}
		}
		out = append(out, rs)
	}
	if w.Partitioned {
		out = append(out, w.days.droppedSets(sets, w.Buckets)...)
	}
	return out
}

// partitionResult sums up the partitions' churn; zero for a table that
// is not partitioned.
func (w *LogWorkload) partitionResult(final []bucketSet) PartitionResult {
	if !w.Partitioned {
		return PartitionResult{}
	}
	return w.days.result(final)
}

// liveBucketLeader is the node leading bucket b of the b-th oldest live
// partition (the oldest is the next one dropped), or of the next live one
// that has a leader for it (a day no writer could create yet has none).
func (w *LogWorkload) liveBucketLeader(ctx context.Context, b int32) (uint32, error) {
	rt, err := w.cl.Table(ctx, w.Database, w.Table) // fresh: a day may be dropped and made again
	if err != nil {
		return 0, err
	}
	for i := range liveDays {
		name := dayPartition(w.days.liveDay(int(b) + i))
		pt, err := rt.Partition(ctx, name)
		if err != nil {
			continue
		}
		for _, p := range pt.Info().Placement {
			if p.Bucket == b && p.Leader != 0 {
				return p.Leader, nil
			}
		}
	}
	return 0, fmt.Errorf("chaos: bucket %d of no live partition has a leader", b)
}

// leaderChanges counts the leader elections between two listings: the
// growth of each bucket's leader epoch (a bucket made since started at
// epoch 0; one dropped since is not counted).
func leaderChanges(before, after []bucketSet) int {
	was := map[setBucket]int32{}
	for _, s := range before {
		for _, b := range s.buckets {
			was[setBucket{s.id, b.Bucket}] = b.LeaderEpoch
		}
	}
	n := 0
	for _, s := range after {
		for _, b := range s.buckets {
			n += int(b.LeaderEpoch - was[setBucket{s.id, b.Bucket}])
		}
	}
	return n
}
