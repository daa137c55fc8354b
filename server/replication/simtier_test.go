package replication

// The seeded simulation of a bucket's remote tier, beside the replication
// simulation (sim_test.go), which leaves remote storage out.
//
// What it models: 2–4 replicas of one bucket (log table or primary key),
// whose logs hold entries of a leader epoch each, cut into segments of
// tierSegEntries offsets; a leader that appends, followers that fetch and
// truncate where their epochs part from the leader's (Divergence), a high
// watermark over a committed ISR that acknowledges what it passes; the
// remote log as a tiering.Manifest over an object store: uploads of
// sealed segments below the high watermark (verified first, Manifest.Add),
// log.ttl expiring its head, an unclean election's fence and its cut
// (Divergence, Manifest.CutAt); each replica's local retention
// (LocalRetention, logstore.RetentionBounds.Remote); followers that fall
// below the leader's start catching up from the remote log, or restoring
// the newest KV snapshot; KV snapshots committed with a version and
// collected late, by a leader that may have been deposed meanwhile; and
// faults: kills, restarts, wiped disks, flipped bits in any copy, clean
// and unclean elections (any live replica), damage reports and repairs
// (OtherInSyncCopy, MayCutDamaged) with the controller's rule for the
// last in-sync copy.
//
// After every step it checks: every acknowledged record (that log.ttl did
// not expire, an unclean election did not give up, and a disk fault did
// not destroy the last copy of) is held, with its bytes, at its offset by
// some replica's log or by the committed remote log; what the leader
// serves at an acknowledged offset (its log, or below its start the
// remote log) is that record and no other history's; the remote start
// moves only by log.ttl; every committed KV snapshot can be restored.
//
// What it does not model: fsync (every append is durable), the network
// (steps are atomic), the protocol core's own rules (sim_test.go checks
// those), more than one bucket.
//
// Run: go test ./server/replication -run TestTierSimulation
// [-simtier.seeds N] [-simtier.first K]; replay one seed with its trace:
// -simtier.seed S -v.

import (
	"cmp"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/tiering"
)

var (
	tierSeeds = flag.Int("simtier.seeds", 1000, "number of tier simulation seeds to run")
	tierFirst = flag.Uint64("simtier.first", 1, "first tier simulation seed")
	tierSeed  = flag.Uint64("simtier.seed", 0, "replay this one tier simulation seed (with -v: print its trace)")
)

const (
	tierSteps      = 600
	tierSegEntries = 4
)

// tEntry is a record: the leader epoch that appended it and its bytes (a
// number unique per record).
type tEntry struct {
	epoch int32
	data  uint64
}

// tCopy is one copy of a record: a replica's or a remote segment's; bad
// when a flipped bit damaged it.
type tCopy struct {
	e   tEntry
	bad bool
}

type tNode struct {
	id    uint32
	up    bool
	log   []tCopy // offsets below start hold nothing
	start int64
	// damagedAt: damage reported and not cut away yet, -1: none.
	damagedAt int64
	// applied: a primary-key replica's store holds the log below it.
	applied int64
	hw      int64
	// fetchedIn is the leader epoch this replica last fetched in: a
	// follower counts for the high watermark only once it fetched (and so
	// truncated) in the current one.
	fetchedIn int32
}

func (n *tNode) end() int64 { return int64(len(n.log)) }

func (n *tNode) holds(o int64) bool { return o >= n.start && o < n.end() }

// spans are the node's epochs over [start, end).
func (n *tNode) spans() []EpochSpan {
	var out []EpochSpan
	for o := n.start; o < n.end(); o++ {
		e := n.log[o].e.epoch
		if k := len(out); k > 0 && out[k-1].Epoch == e {
			out[k-1].End = o + 1
			continue
		}
		out = append(out, EpochSpan{Epoch: e, Start: o, End: o + 1})
	}
	return out
}

// truncate cuts the log to end (never below start: then it is emptied at
// end, as logstore's Truncate below the start resets).
func (n *tNode) truncate(end int64) {
	if end <= n.start {
		n.reset(end)
		return
	}
	n.log = n.log[:end]
	n.hw = min(n.hw, end)
	n.applied = min(n.applied, end)
}

// reset empties the log to start over at offset.
func (n *tNode) reset(offset int64) {
	n.log = make([]tCopy, offset)
	n.start = offset
	n.hw = min(n.hw, offset)
	n.applied = min(n.applied, offset)
}

type tSnap struct {
	key    string
	offset int64
	epoch  int32
}

// tCollect is a KV snapshot collection a leader scheduled after its
// commit, which may run late.
type tCollect struct {
	node     uint32
	epoch    int32
	retained []string // the list its commit answered with
}

type tWorld struct {
	seed  uint64
	rng   *rand.Rand
	step  int
	trace *strings.Builder
	pk    bool

	nodes []*tNode
	// The controller's state: leader, epoch, committed ISR, the remote
	// log (manifest, version, fence) and the KV snapshots.
	leader    uint32
	epoch     int32
	isr       []uint32
	manifest  *tiering.Manifest
	version   int64
	fence     int32
	snaps     []tSnap
	snapsVer  int64
	objects   map[string][]tCopy // segment data
	snapStore map[string]bool    // KV snapshot objects

	remoteStart   int64 // the remote start as last checked
	expiredBelow  int64 // log.ttl expired everything below
	acked         map[int64]tEntry
	nextData      uint64
	pendingCollex []tCollect
	stats         tierStats
}

type tierStats struct {
	acked, forgiven, uploads, cuts, uncleans, restores, catchUps, retained, damages, collections int
}

func (s *tierStats) add(o tierStats) {
	s.acked += o.acked
	s.forgiven += o.forgiven
	s.uploads += o.uploads
	s.cuts += o.cuts
	s.uncleans += o.uncleans
	s.restores += o.restores
	s.catchUps += o.catchUps
	s.retained += o.retained
	s.damages += o.damages
	s.collections += o.collections
}

func newTierWorld(seed uint64, traced bool) *tWorld {
	rng := rand.New(rand.NewPCG(seed, 0x7e1e))
	w := &tWorld{seed: seed, rng: rng, pk: rng.IntN(2) == 0, objects: map[string][]tCopy{}, snapStore: map[string]bool{},
		acked: map[int64]tEntry{}, manifest: &tiering.Manifest{Format: tiering.ManifestFormat}}
	if traced {
		w.trace = &strings.Builder{}
	}
	n := 2 + rng.IntN(3)
	for i := range n {
		w.nodes = append(w.nodes, &tNode{id: uint32(i + 1), up: true, damagedAt: -1})
		w.isr = append(w.isr, uint32(i+1))
	}
	w.leader, w.epoch = 1, 1
	w.logf("%d replicas, primary key %v", n, w.pk)
	return w
}

func (w *tWorld) logf(format string, args ...any) {
	if w.trace != nil {
		fmt.Fprintf(w.trace, "step %d: %s\n", w.step, fmt.Sprintf(format, args...))
	}
}

func (w *tWorld) node(id uint32) *tNode { return w.nodes[id-1] }

func (w *tWorld) lead() *tNode {
	if w.leader == 0 || !w.node(w.leader).up {
		return nil
	}
	return w.node(w.leader)
}

func (w *tWorld) pick(ok func(*tNode) bool) *tNode {
	var c []*tNode
	for _, n := range w.nodes {
		if ok(n) {
			c = append(c, n)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[w.rng.IntN(len(c))]
}

// core is the protocol core of node n as the committed metadata makes it,
// for the rules it decides.
func (w *tWorld) core(n *tNode) *Bucket {
	b := New(Config{Self: n.id, ReplicaLagMax: time.Second}, Log{DurableEnd: n.end(), LatestEpoch: -1})
	replicas := make([]uint32, len(w.nodes))
	for i := range replicas {
		replicas[i] = uint32(i + 1)
	}
	b.Assign(Assignment{Leader: w.leader, LeaderEpoch: w.epoch, BucketEpoch: w.epoch, Replicas: replicas, ISR: w.isr}, n.end(), t0)
	return b
}

// remoteView is the committed remote log as a replica sees it.
func (w *tWorld) remoteView() RemoteView {
	m := w.manifest
	if len(m.Segments) == 0 {
		return RemoteView{Start: m.Start(), CoveredFrom: m.Start(), End: m.End(), Fenced: w.fence != 0}
	}
	return RemoteView{Start: m.Start(), CoveredFrom: m.RunStart(), End: m.End(), Fenced: w.fence != 0}
}

func (w *tWorld) newestSnap() int64 {
	if len(w.snaps) == 0 {
		return 0
	}
	return w.snaps[len(w.snaps)-1].offset
}

type tAction struct {
	weight int
	do     func(w *tWorld)
}

var tierActions = []tAction{
	{20, (*tWorld).produce},
	{25, (*tWorld).fetch},
	{15, (*tWorld).commit},
	{4, (*tWorld).shrink},
	{3, (*tWorld).kill},
	{6, (*tWorld).restart},
	{1, (*tWorld).wipe},
	{8, (*tWorld).electClean},
	{3, (*tWorld).electUnclean},
	{2, (*tWorld).flip},
	{8, (*tWorld).consume},
	{5, (*tWorld).repair},
	{10, (*tWorld).tier},
	{2, (*tWorld).expire},
	{8, (*tWorld).retention},
	{4, (*tWorld).snapshot},
	{3, (*tWorld).collect},
}

var tierWeight = func() int {
	t := 0
	for _, a := range tierActions {
		t += a.weight
	}
	return t
}()

func (w *tWorld) stepOnce() {
	w.step++
	r := w.rng.IntN(tierWeight)
	for _, a := range tierActions {
		if r < a.weight {
			a.do(w)
			return
		}
		r -= a.weight
	}
}

func (w *tWorld) produce() {
	l := w.lead()
	if l == nil || l.damagedAt >= 0 {
		return
	}
	for range 1 + w.rng.IntN(3) {
		w.nextData++
		l.log = append(l.log, tCopy{e: tEntry{epoch: w.epoch, data: w.nextData}})
	}
}

// readDamage is the leader meeting a damaged copy at offset o (a consumer,
// a follower's fetch, an upload's check): it reports the damage when
// another in-sync replica holds the records, and the controller takes it
// out of the ISR and its leadership, except the ISR's last member; else it
// answers CORRUPT and keeps its log.
func (w *tWorld) readDamage(l *tNode, o int64) {
	if !w.core(l).OtherInSyncCopy() {
		w.logf("node %d: damaged copy at %d, the only in-sync copy: CORRUPT, log kept", l.id, o)
		return
	}
	w.stats.damages++
	if l.damagedAt < 0 || o < l.damagedAt {
		l.damagedAt = o
	}
	if len(w.isr) == 1 && w.isr[0] == l.id {
		w.logf("node %d reports damage at %d; the controller keeps the last in-sync copy", l.id, o)
		l.damagedAt = -1
		return
	}
	w.isr = slices.DeleteFunc(slices.Clone(w.isr), func(id uint32) bool { return id == l.id })
	w.leader, w.epoch = 0, w.epoch+1
	for _, id := range w.isr {
		if w.node(id).up {
			w.leader = id
			break
		}
	}
	w.logf("node %d reports damage at %d: out of the ISR %v, leader %d at epoch %d", l.id, o, w.isr, w.leader, w.epoch)
}

func (w *tWorld) fetch() {
	l := w.lead()
	f := w.pick(func(n *tNode) bool { return n.up && n.id != w.leader && n.damagedAt < 0 })
	if l == nil || f == nil || l.damagedAt >= 0 {
		return
	}
	if f.end() < l.start {
		w.catchUp(l, f)
		return
	}
	// KIP-320, as ServeFetch and TruncationPoint decide it, until the
	// follower's last epoch ends on the leader where its log does.
	epochs := w.leaderEpochs(l)
	ll := LeaderLog{StartOffset: l.start, WrittenEnd: l.end(), OldestEpoch: epochs[0].Epoch, Remote: w.remoteView(),
		EpochEnd: func(e int32) (int32, int64, bool) { return epochEnd(epochs, l.end(), e) }}
	if w.pk && len(w.snaps) > 0 {
		s := w.snaps[len(w.snaps)-1]
		ll.SnapshotOffset, ll.SnapshotEpoch = s.offset, s.epoch
	}
	for {
		last := int32(-1)
		if f.end() > f.start {
			last = f.log[f.end()-1].e.epoch
		}
		ep, end, diverging := ll.divergence(last, f.end(), slices.Contains(w.isr, f.id))
		if !diverging {
			break
		}
		if to := TruncationPoint(ep, end, func(e int32) (int32, int64, bool) { return epochEnd(f.spans(), f.end(), e) }); to < f.end() {
			w.logf("node %d truncates to %d (leader %d)", f.id, to, l.id)
			f.truncate(to)
			if f.end() < l.start {
				return // it catches up next
			}
		} else if !UnjudgedBelowStart(end, l.start, f.start, f.end()) {
			return // answered the same again: nothing fetched
		}
		if UnjudgedBelowStart(end, l.start, f.start, f.end()) {
			w.judgeBelowStart(l, f)
			return
		}
	}
	if f.end() > l.end() {
		return // out of range (ServeFetch): past the leader's end
	}
	f.fetchedIn = w.epoch
	to := min(l.end(), f.end()+int64(1+w.rng.IntN(6)))
	for o := f.end(); o < to; o++ {
		if l.log[o].bad {
			w.readDamage(l, o)
			return
		}
		f.log = append(f.log, l.log[o])
	}
	f.hw = max(f.hw, min(l.hw, f.end()))
	if w.pk {
		f.applied = max(f.applied, f.hw)
	}
	if !slices.Contains(w.isr, f.id) && f.end() >= l.end() && f.end() >= l.hw {
		w.isr = append(w.isr, f.id)
		w.logf("node %d joins the ISR %v", f.id, w.isr)
	}
}

// catchUp brings a follower whose log ends below the leader's start
// toward it: from the remote log where it holds every offset, a primary-key
// replica from the newest KV snapshot, else it starts over where the
// cluster's data starts.
func (w *tWorld) catchUp(l, f *tNode) {
	if w.fence != 0 {
		return // the remote copies wait for their cut
	}
	v := w.remoteView()
	if w.pk {
		if n := len(w.snaps); n > 0 && w.snaps[n-1].offset > f.end() && (w.snaps[n-1].offset >= l.start || w.snaps[n-1].offset >= v.CoveredFrom) {
			s := w.snaps[n-1]
			// The changelog below a KV snapshot is the one thing a
			// primary-key bucket may give up before log.ttl: the store
			// holds its effect. A restore drops it from this replica,
			// which may hold the only copy (in a gap a restored leader
			// left in the remote log).
			keep := f.log
			f.log = nil
			for o, e := range w.acked {
				if o < s.offset && o < int64(len(keep)) && keep[o].e == e && !w.anyCopy(o, e) {
					delete(w.acked, o)
					w.stats.forgiven++
				}
			}
			f.reset(s.offset)
			f.applied = s.offset
			w.stats.restores++
			w.logf("node %d restores the KV snapshot at %d", f.id, s.offset)
			return
		}
	}
	if f.end() >= v.CoveredFrom && f.end() < v.End {
		seg, ok := w.manifest.Find(f.end())
		if !ok {
			return
		}
		data := w.objects[seg.DataKey]
		if d, ok := w.remoteDisagrees(f); ok {
			w.logf("node %d truncates to %d (the remote log)", f.id, d)
			f.truncate(d)
			return
		}
		for o := f.end(); o < seg.NextOffset; o++ {
			f.log = append(f.log, data[o-seg.BaseOffset])
		}
		w.stats.catchUps++
		return
	}
	if w.pk {
		return // a store cannot skip changes
	}
	start := l.start
	if v.End >= l.start && v.CoveredFrom < start && len(w.manifest.Segments) > 0 {
		start = v.CoveredFrom
	}
	w.logf("node %d starts over at %d", f.id, start)
	f.reset(start)
}

// leaderEpochs is the leader's epoch cache: the epochs of its batches,
// and its own epoch, which it assigned at its end when elected
// (Effects.StartEpoch, logstore's AssignEpoch) whether it wrote in it yet
// or not.
func (w *tWorld) leaderEpochs(l *tNode) []EpochSpan {
	s := l.spans()
	if n := len(s); n == 0 || s[n-1].Epoch != w.epoch {
		s = append(s, EpochSpan{Epoch: w.epoch, Start: l.end(), End: l.end()})
	}
	return s
}

// judgeBelowStart is the catch-up task of a follower whose log ends at
// its leader's start with batches the leader could not judge
// (UnjudgedBelowStart): the remote log judges them (truncateToRemote),
// and what it does not cut goes, the log starting over at the leader's
// start.
func (w *tWorld) judgeBelowStart(l, f *tNode) {
	if w.fence != 0 {
		return // the remote copies wait for their cut
	}
	if d, ok := w.remoteDisagrees(f); ok {
		w.logf("node %d truncates to %d (the remote log, below leader %d's start)", f.id, d, l.id)
		f.truncate(d)
		return
	}
	if !MayDropBelowStart(f.start, l.start, w.remoteView(), w.pk, w.newestSnap()) {
		w.logf("node %d waits: its log below leader %d's start %d may hold the only copies", f.id, l.id, l.start)
		return
	}
	w.logf("node %d starts over at leader %d's start %d: its log below is the remote log's", f.id, l.id, l.start)
	w.forgiveBelowSnapshot(f, l.start)
	f.reset(l.start)
}

// forgiveBelowSnapshot gives up the acknowledged records below the newest
// KV snapshot that only f's log, about to drop what it holds below to,
// holds: a primary-key bucket's changelog there goes (restoreFromSnapshot
// gives it up the same way).
func (w *tWorld) forgiveBelowSnapshot(f *tNode, to int64) {
	keep := f.log
	f.log = nil
	for o, e := range w.acked {
		if o < w.newestSnap() && o < to && o >= f.start && o < int64(len(keep)) && keep[o].e == e && !w.anyCopy(o, e) {
			delete(w.acked, o)
			w.stats.forgiven++
		}
	}
	f.log = keep
}

// epochEnd answers an epoch cache (spans over a log ending at end) as
// logstore's EndOffsetForEpoch: the largest epoch at most epoch it holds
// and where that ends; an epoch older than all ends where the first
// starts.
func epochEnd(spans []EpochSpan, end int64, epoch int32) (int32, int64, bool) {
	n := len(spans)
	switch {
	case n == 0 || epoch < 0:
		return 0, 0, false
	case epoch == spans[n-1].Epoch:
		return epoch, end, true
	}
	i := slices.IndexFunc(spans, func(s EpochSpan) bool { return s.Epoch > epoch })
	switch i {
	case -1:
		return 0, 0, false
	case 0:
		return epoch, spans[0].Start, true
	}
	return spans[i-1].Epoch, spans[i].Start, true
}

// remoteDisagrees is where f's log parts from the remote log's
// (RemoteDisagreement, as truncateToRemote asks it).
func (w *tWorld) remoteDisagrees(f *tNode) (int64, bool) {
	return RemoteDisagreement(manifestSpans(w.manifest), f.spans(), f.start, f.end())
}

func manifestSpans(m *tiering.Manifest) []EpochSpan {
	var out []EpochSpan
	m.EpochRanges(func(epoch int32, start, end int64) {
		out = append(out, EpochSpan{Epoch: epoch, Start: start, End: end})
	})
	return out
}

// commit moves the leader's high watermark to the smallest end over the
// ISR and acknowledges the writes of its epoch that it passed.
func (w *tWorld) commit() {
	l := w.lead()
	if l == nil {
		return
	}
	hw := l.end()
	for _, id := range w.isr {
		if f := w.node(id); id != l.id {
			if f.fetchedIn != w.epoch {
				return
			}
			hw = min(hw, f.end())
		}
	}
	for o := max(l.hw, l.start, w.expiredBelow); o < hw; o++ {
		// A writer hears back only from the leader of its write's epoch;
		// records of earlier epochs committed now were answered with
		// NOT_LEADER (outcome unknown) when their leader lost its place.
		// One whose every copy a flipped bit damaged meanwhile is lost
		// to the fault, not by the protocol.
		if _, ok := w.acked[o]; !ok && l.log[o].e.epoch == w.epoch && w.anyCopy(o, l.log[o].e) {
			w.acked[o] = l.log[o].e
			w.stats.acked++
		}
	}
	l.hw = max(l.hw, hw)
	if w.pk {
		l.applied = max(l.applied, l.hw)
	}
}

func (w *tWorld) shrink() {
	l := w.lead()
	if l == nil {
		return
	}
	if f := w.pick(func(n *tNode) bool {
		return n.id != l.id && slices.Contains(w.isr, n.id) && (!n.up || n.end() < l.end())
	}); f != nil {
		w.isr = slices.DeleteFunc(slices.Clone(w.isr), func(id uint32) bool { return id == f.id })
		w.logf("node %d leaves the ISR %v", f.id, w.isr)
	}
}

func (w *tWorld) kill() {
	if n := w.pick(func(n *tNode) bool { return n.up }); n != nil {
		n.up = false
		w.logf("node %d killed", n.id)
	}
}

func (w *tWorld) restart() {
	if n := w.pick(func(n *tNode) bool { return !n.up }); n != nil {
		n.up = true
		n.hw = min(n.hw, n.end())
		w.logf("node %d restarts (log [%d, %d))", n.id, n.start, n.end())
	}
}

// wipe loses a node's disk: it comes back empty, a new incarnation, out
// of the ISR even as its last member (the bucket then waits for an
// unclean election).
func (w *tWorld) wipe() {
	n := w.pick(func(*tNode) bool { return true })
	if n == nil || w.rng.IntN(3) != 0 {
		return
	}
	n.up, n.log, n.start, n.hw, n.applied, n.damagedAt = false, nil, 0, 0, 0, -1
	w.isr = slices.DeleteFunc(slices.Clone(w.isr), func(id uint32) bool { return id == n.id })
	if w.leader == n.id {
		w.leader, w.epoch = 0, w.epoch+1
	}
	w.logf("node %d wiped; ISR %v", n.id, w.isr)
	w.forgiveLost()
}

func (w *tWorld) electClean() {
	if w.lead() != nil {
		return
	}
	for _, id := range w.isr {
		if n := w.node(id); n.up && n.damagedAt < 0 {
			w.leader, w.epoch = id, w.epoch+1
			w.isr = slices.DeleteFunc(slices.Clone(w.isr), func(id uint32) bool { return !w.node(id).up })
			w.logf("node %d leads epoch %d, ISR %v", id, w.epoch, w.isr)
			return
		}
	}
}

// electUnclean is an operator's election when no live ISR member is left:
// any live replica leads, alone in the ISR, a new history; the remote
// copies are fenced until its cut. What the new leader's history lacks of
// the acknowledged records is given up (that is what unclean means).
func (w *tWorld) electUnclean() {
	if w.lead() != nil || slices.ContainsFunc(w.isr, func(id uint32) bool { return w.node(id).up }) {
		return
	}
	n := w.pick(func(n *tNode) bool { return n.up })
	if n == nil {
		return
	}
	w.leader, w.epoch, w.isr = n.id, w.epoch+1, []uint32{n.id}
	n.damagedAt = -1
	if len(w.manifest.Segments) > 0 || len(w.snaps) > 0 {
		w.fence = w.epoch
	}
	w.stats.uncleans++
	w.logf("unclean election: node %d (log [%d, %d)) leads epoch %d; fence %d", n.id, n.start, n.end(), w.epoch, w.fence)
	for o, e := range w.acked {
		held := n.holds(o) && n.log[o].e == e && !n.log[o].bad
		if o < n.start {
			held = w.remoteHolds(o, e) && (w.fence == 0 || w.cutKeeps(n, o))
		}
		if !held {
			delete(w.acked, o)
			w.stats.forgiven++
		}
	}
	n.hw = min(n.hw, n.end())
}

// cutKeeps says whether the fence's cut would keep offset o of the remote
// log: o is below where n's log parts from it.
func (w *tWorld) cutKeeps(n *tNode, o int64) bool {
	d, ok := Divergence(manifestSpans(w.manifest), n.spans(), n.start)
	return !ok || o < d
}

// remoteHolds says whether the committed remote log holds a good copy of e
// at o.
func (w *tWorld) remoteHolds(o int64, e tEntry) bool {
	seg, ok := w.manifest.Find(o)
	if !ok || o < seg.BaseOffset || o >= seg.NextOffset {
		return false
	}
	c := w.objects[seg.DataKey][o-seg.BaseOffset]
	return c.e == e && !c.bad
}

// forgiveLost gives up the acknowledged records no good copy holds any
// more after a fault beyond what replication promises (a wiped disk, a
// flipped bit in the last copy).
func (w *tWorld) forgiveLost() {
	for o, e := range w.acked {
		if !w.anyCopy(o, e) {
			delete(w.acked, o)
			w.stats.forgiven++
		}
	}
}

func (w *tWorld) anyCopy(o int64, e tEntry) bool {
	for _, n := range w.nodes {
		if n.holds(o) && n.log[o].e == e && !n.log[o].bad {
			return true
		}
	}
	return w.remoteHolds(o, e)
}

// flip damages one copy of a record on a replica's disk. One damage at a
// time: while a damaged copy is on any replica's disk, or a repair is
// pending, no other bit flips (two faults at once may lose a record: a
// replica cuts its damaged log back trusting the leader's copy, which a
// second flip damaged meanwhile).
func (w *tWorld) flip() {
	for _, n := range w.nodes {
		if n.damagedAt >= 0 || slices.ContainsFunc(n.log[n.start:], func(c tCopy) bool { return c.bad }) {
			return
		}
	}
	n := w.pick(func(n *tNode) bool { return n.end() > n.start })
	if n == nil {
		return
	}
	o := n.start + w.rng.Int64N(n.end()-n.start)
	n.log[o].bad = true
	w.logf("node %d: bit flipped at %d", n.id, o)
	w.forgiveLost()
}

// consume reads an acknowledged offset through the leader.
func (w *tWorld) consume() {
	l := w.lead()
	if l == nil || l.damagedAt >= 0 || l.hw == 0 {
		return
	}
	o := w.rng.Int64N(l.hw)
	if l.holds(o) && l.log[o].bad {
		w.readDamage(l, o)
	}
}

// repair is a damaged replica out of the ISR cutting its log back to the
// damage, when the leader's readable copies hold everything from there;
// else it keeps its log, damaged copy and all.
func (w *tWorld) repair() {
	n := w.pick(func(n *tNode) bool { return n.up && n.damagedAt >= 0 })
	l := w.lead()
	if n == nil || l == nil {
		return
	}
	c := w.core(n)
	if !c.MayCutDamaged(false, n.damagedAt, n.damagedAt) {
		return
	}
	if !c.MayCutDamaged(false, n.damagedAt, HeldFrom(l.start, w.remoteView())) {
		w.logf("node %d keeps its damaged log: the leader's copies start past %d", n.id, n.damagedAt)
		n.damagedAt = -1
		return
	}
	w.logf("node %d cuts its damaged log back to %d", n.id, n.damagedAt)
	n.truncate(max(n.damagedAt, n.start))
	n.damagedAt = -1
}

// segments are a node's local segments: [start, next multiple of
// tierSegEntries), then every tierSegEntries offsets; the last, holding
// the end, is the active one.
func (n *tNode) segments() [][2]int64 {
	var out [][2]int64
	for b := n.start; b < n.end(); {
		next := (b/tierSegEntries + 1) * tierSegEntries
		out = append(out, [2]int64{b, next})
		b = next
	}
	return out
}

// tier is the leader's tiering round: the fence's cut first, else the
// uploads of sealed segments below the high watermark, each verified.
func (w *tWorld) tier() {
	l := w.lead()
	if l == nil || l.damagedAt >= 0 {
		return
	}
	if w.fence != 0 {
		w.cut(l)
		return
	}
	changed := false
	for _, s := range l.segments() {
		if s[1] >= l.end() || s[1] > l.hw || s[1] <= w.manifest.End() {
			continue
		}
		data := slices.Clone(l.log[s[0]:s[1]])
		if i := slices.IndexFunc(data, func(c tCopy) bool { return c.bad }); i >= 0 {
			w.readDamage(l, s[0]+int64(i))
			return
		}
		key := fmt.Sprintf("log/%d-%d", s[0], w.epoch)
		w.objects[key] = data
		rs := tiering.RemoteSegment{BaseOffset: s[0], NextOffset: s[1], Bytes: s[1] - s[0], DataKey: key, IndexKey: key + ".index",
			UploadEpoch: w.epoch}
		for i, c := range data {
			if i == 0 || c.e.epoch != data[i-1].e.epoch {
				rs.Epochs = append(rs.Epochs, tiering.EpochStart{Epoch: c.e.epoch, StartOffset: s[0] + int64(i)})
			}
		}
		_, replaced := w.manifest.Add(rs)
		for _, r := range replaced {
			if r.DataKey != key {
				delete(w.objects, r.DataKey)
			}
		}
		w.stats.uploads++
		changed = true
	}
	if changed {
		w.version++
		w.logf("node %d commits the remote log [%d, %d) covered from %d", l.id, w.manifest.Start(), w.manifest.End(), w.manifest.RunStart())
	}
}

// cut commits the fenced remote log cut where the leader's log parts from
// it, drops the KV snapshots past it, lifts the fence.
func (w *tWorld) cut(l *tNode) {
	at := w.manifest.End()
	if d, ok := Divergence(manifestSpans(w.manifest), l.spans(), l.start); ok {
		at = min(at, d)
	}
	dropped := w.manifest.CutAt(at, func(s tiering.RemoteSegment, offset int64) (int64, bool) {
		w.objects[s.DataKey] = w.objects[s.DataKey][:offset-s.BaseOffset]
		return offset - s.BaseOffset, true
	})
	for _, s := range dropped {
		delete(w.objects, s.DataKey)
	}
	w.snaps = slices.DeleteFunc(w.snaps, func(s tSnap) bool { return s.offset > at })
	w.fence = 0
	w.version++
	w.stats.cuts++
	w.logf("node %d cuts the remote log at %d: [%d, %d)", l.id, at, w.manifest.Start(), w.manifest.End())
}

// expire is log.ttl dropping the remote log's oldest segment (of a
// primary-key table only below its newest snapshot); what it held is
// given up, on every replica too.
func (w *tWorld) expire() {
	if w.fence != 0 || len(w.manifest.Segments) == 0 {
		return
	}
	head := w.manifest.Segments[0]
	if w.pk && head.NextOffset > w.newestSnap() {
		return
	}
	w.manifest.Segments = w.manifest.Segments[1:]
	w.remoteStart = w.manifest.Start()
	delete(w.objects, head.DataKey)
	w.expiredBelow = max(w.expiredBelow, head.NextOffset)
	w.version++
	for o := range w.acked {
		if o < w.expiredBelow {
			delete(w.acked, o)
		}
	}
	w.logf("log.ttl expires [%d, %d)", head.BaseOffset, head.NextOffset)
}

// retention is one replica's local retention: sealed segments the remote
// log holds go by the local rules, and what log.ttl expired by age.
func (w *tWorld) retention() {
	n := w.pick(func(n *tNode) bool { return n.up && n.end() > n.start })
	if n == nil {
		return
	}
	r := LocalRetention(w.remoteView(), w.pk, n.applied, w.newestSnap())
	bounds := logstore.RetentionBounds{RemoteStart: r.RemoteStart, RemoteEnd: r.RemoteEnd, ExpireBelow: r.ExpireBelow}
	segs := n.segments()
	cut := n.start
	for _, s := range segs[:len(segs)-1] {
		if !bounds.Remote(s[0], s[1]) && !(s[1] <= w.expiredBelow && s[1] <= bounds.ExpireBelow) {
			break
		}
		cut = s[1]
	}
	if cut > n.start {
		for o := n.start; o < cut; o++ {
			n.log[o] = tCopy{}
		}
		n.start = cut
		w.stats.retained++
		w.logf("node %d: retention deletes below %d", n.id, cut)
	}
}

// snapshot is a primary-key leader's KV snapshot at its applied offset,
// committed on the list version it read, then collected, maybe late.
func (w *tWorld) snapshot() {
	l := w.lead()
	if !w.pk || l == nil || w.fence != 0 || l.applied == 0 || l.applied <= w.newestSnap() {
		return
	}
	key := fmt.Sprintf("kv/%d/%d", w.epoch, l.applied)
	w.snapStore[key] = true
	w.snaps = append(w.snaps, tSnap{key: key, offset: l.applied, epoch: w.epoch})
	if len(w.snaps) > 2 {
		w.snaps = w.snaps[len(w.snaps)-2:]
	}
	w.snapsVer++
	var retained []string
	for _, s := range w.snaps {
		retained = append(retained, s.key)
	}
	w.pendingCollex = append(w.pendingCollex, tCollect{node: l.id, epoch: w.epoch, retained: retained})
	w.logf("node %d commits the KV snapshot at %d", l.id, l.applied)
}

// collect runs a scheduled collection: only while its node still leads
// at the epoch it committed in, from the committed list as it is now,
// deleting only objects of its epoch or earlier.
func (w *tWorld) collect() {
	if len(w.pendingCollex) == 0 {
		return
	}
	i := w.rng.IntN(len(w.pendingCollex))
	c := w.pendingCollex[i]
	w.pendingCollex = slices.Delete(w.pendingCollex, i, i+1)
	if w.leader != c.node || w.epoch != c.epoch {
		return
	}
	keep := map[string]bool{}
	for _, s := range w.snaps {
		keep[s.key] = true
	}
	for key := range w.snapStore {
		var epoch int32
		var offset int64
		if _, err := fmt.Sscanf(key, "kv/%d/%d", &epoch, &offset); err == nil && !keep[key] && epoch <= c.epoch {
			delete(w.snapStore, key)
		}
	}
	w.stats.collections++
}

// check asserts the properties after a step.
func (w *tWorld) check() error {
	if len(w.manifest.Segments) == 0 {
		w.remoteStart = -1 // an empty remote log starts wherever its next upload does
	} else if s := w.manifest.Start(); w.remoteStart < 0 || s < w.remoteStart {
		w.remoteStart = s
	} else if s > w.remoteStart {
		return fmt.Errorf("the remote start moved from %d to %d, not by log.ttl", w.remoteStart, s)
	}
	for _, s := range w.snaps {
		if !w.snapStore[s.key] {
			return fmt.Errorf("committed KV snapshot %s (offset %d, epoch %d) no longer restores: its objects are gone", s.key, s.offset, s.epoch)
		}
	}
	offsets := make([]int64, 0, len(w.acked))
	for o := range w.acked {
		offsets = append(offsets, o)
	}
	slices.Sort(offsets)
	l := w.lead()
	for _, o := range offsets {
		e := w.acked[o]
		if !w.anyCopy(o, e) {
			return fmt.Errorf("acknowledged offset %d (%+v) is held by no replica's log and not by the remote log", o, e)
		}
		// The committed remote log, unless fenced, is the history below
		// the leader's start: it holds no other record at an
		// acknowledged offset, or local retention would serve that one
		// once it deleted the local copies.
		if seg, ok := w.manifest.Find(o); ok && w.fence == 0 && o >= seg.BaseOffset && o < seg.NextOffset {
			if c := w.objects[seg.DataKey][o-seg.BaseOffset]; c.e != e {
				return fmt.Errorf("the remote log holds %+v at acknowledged offset %d, not %+v", c.e, o, e)
			}
		}
		if l == nil {
			continue
		}
		switch {
		case l.holds(o):
			if c := l.log[o]; c.e != e && !c.bad {
				return fmt.Errorf("leader %d serves %+v at acknowledged offset %d, not %+v", l.id, c.e, o, e)
			}
		case o < l.start && w.fence == 0:
			seg, ok := w.manifest.Find(o)
			if ok && o >= seg.BaseOffset && o < seg.NextOffset {
				if c := w.objects[seg.DataKey][o-seg.BaseOffset]; c.e != e {
					return fmt.Errorf("the remote log serves %+v at acknowledged offset %d, not %+v", c.e, o, e)
				} else if c.bad {
					return fmt.Errorf("the remote log serves a damaged copy at acknowledged offset %d", o)
				}
			}
		}
	}
	return nil
}

type tierFailure struct {
	seed uint64
	step int
	err  error
}

func (f *tierFailure) Error() string {
	return fmt.Sprintf("seed %d, step %d: %v\nreplay: go test ./server/replication -run TestTierSimulation -simtier.seed %d -v", f.seed, f.step, f.err, f.seed)
}

func runTierSeed(seed uint64, traced bool) (stats tierStats, trace string, fail *tierFailure) {
	w := newTierWorld(seed, traced)
	defer func() {
		if r := recover(); r != nil {
			fail = &tierFailure{seed: seed, step: w.step, err: fmt.Errorf("panic: %v", r)}
		}
		if w.trace != nil {
			trace = w.trace.String()
		}
	}()
	for w.step < tierSteps {
		w.stepOnce()
		if err := w.check(); err != nil {
			return w.stats, "", &tierFailure{seed: seed, step: w.step, err: err}
		}
	}
	return w.stats, "", nil
}

func TestTierSimulation(t *testing.T) {
	if *tierSeed != 0 {
		stats, trace, fail := runTierSeed(*tierSeed, testing.Verbose())
		t.Log(trace)
		if fail != nil {
			t.Fatal(fail)
		}
		t.Logf("seed %d: %+v", *tierSeed, stats)
		return
	}
	seeds := make(chan uint64)
	var (
		mu    sync.Mutex
		total tierStats
		fails []*tierFailure
		wg    sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed := range seeds {
				stats, _, fail := runTierSeed(seed, false)
				mu.Lock()
				total.add(stats)
				if fail != nil {
					fails = append(fails, fail)
				}
				mu.Unlock()
			}
		})
	}
	for i := range *tierSeeds {
		seeds <- *tierFirst + uint64(i)
	}
	close(seeds)
	wg.Wait()
	t.Logf("%d seeds from %d: %+v", *tierSeeds, *tierFirst, total)
	if total.acked == 0 || total.uploads == 0 || total.cuts == 0 || total.restores == 0 || total.damages == 0 || total.collections == 0 {
		t.Fatalf("a path was never taken: %+v", total)
	}
	slices.SortFunc(fails, func(a, b *tierFailure) int { return cmp.Compare(a.seed, b.seed) })
	for i, f := range fails {
		if i == 3 {
			t.Errorf("and %d more failing seeds", len(fails)-3)
			break
		}
		t.Error(f)
	}
}
