package tablet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/server/internal/metaimage"
	"github.com/floedb/floe/transport/pb"
)

// admit reports whether a tablet node may act on metadata at updateIndex,
// given the Raft index at which its current registration was committed
// (0: not registered yet). Metadata older than the registration describes
// the node's previous incarnation or run: a wiped leader restarted within
// the liveness grace would otherwise lead its old epoch with an empty log
// before the controller has seen it register again.
func admit(updateIndex, registrationIndex uint64) bool {
	return registrationIndex > 0 && updateIndex >= registrationIndex
}

// watchVerdict is what the follower does with one metadata update.
type watchVerdict int

const (
	// verdictApply: hand the update to the replicas.
	verdictApply watchVerdict = iota
	// verdictSkip: already applied (a change repeated after a reconnect).
	verdictSkip
	// verdictReconnect: the stream serves metadata older than the
	// registration or than what was applied already (a lagging meta node);
	// drop it and ask again, later or elsewhere.
	verdictReconnect
)

func (v watchVerdict) String() string {
	switch v {
	case verdictApply:
		return "apply"
	case verdictSkip:
		return "skip"
	case verdictReconnect:
		return "reconnect"
	}
	return fmt.Sprintf("watchVerdict(%d)", int(v))
}

// watchGate is the pure rule of what the tablet role acts on: nothing
// below its registration, every change once and in order, an image only
// when it does not go back in time.
type watchGate struct {
	// registeredAt is the Raft index of this run's registration.
	registeredAt uint64
	// applied is the index of the last update handed to the replicas, 0
	// before the first.
	applied uint64
}

// verdict decides about u without changing the gate.
func (g *watchGate) verdict(u *pb.MetadataUpdate) watchVerdict {
	idx := u.GetIndex()
	switch {
	case !u.GetFull() && g.applied > 0 && idx <= g.applied:
		return verdictSkip
	case !admit(idx, g.registeredAt):
		return verdictReconnect
	case u.GetFull() && idx < g.applied:
		return verdictReconnect
	case !u.GetFull() && g.applied == 0:
		// A change with no image under it: the replicas would act on a
		// partial view. The stream always starts with an image from 0.
		return verdictReconnect
	}
	return verdictApply
}

// markApplied records that u was handed to the replicas.
func (g *watchGate) markApplied(u *pb.MetadataUpdate) {
	if !admit(u.GetIndex(), g.registeredAt) || u.GetIndex() < g.applied {
		panic(fmt.Sprintf("server: metadata update %d applied below registration %d or applied index %d",
			u.GetIndex(), g.registeredAt, g.applied))
	}
	g.applied = u.GetIndex()
}

// defaultWatchIdle is the follower's idle timeout when Deps.WatchIdle
// sets none: four of the meta role's one-second keepalives.
const defaultWatchIdle = 4 * time.Second

// MetaStream is one open WatchMetadata stream.
type MetaStream interface {
	Recv() (*pb.MetadataUpdate, error)
	Close() error
}

// metaFollowerConfig is what a metaFollower reads from and writes to.
type metaFollowerConfig struct {
	// addrs lists the meta nodes to watch, in the order to try them.
	addrs func() []string
	// open starts a watch at addr after index from (0: image first).
	open func(ctx context.Context, addr string, from uint64) (MetaStream, error)
	// apply hands one update to the replicas.
	apply func(*pb.MetadataUpdate)
	// registration blocks until the node's registration is committed and
	// returns its Raft index.
	registration func(ctx context.Context) (uint64, error)
	// idle is how long a stream may stay silent (no change, no keepalive)
	// before the follower gives up on it; 0: defaultWatchIdle.
	idle time.Duration
	log  *slog.Logger
}

// metaFollower feeds the tablet role's replicas the committed metadata,
// starting only once the node's registration is committed and acting on
// nothing older than it, and resuming from its last index after any
// failure.
type metaFollower struct {
	cfg metaFollowerConfig

	mu            sync.Mutex
	gate          watchGate
	connected     bool   // a stream is open and has delivered an admitted update
	lastErr       string // why the last stream ended
	following     chan struct{}
	followingOnce sync.Once
}

func newMetaFollower(cfg metaFollowerConfig) *metaFollower {
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	if cfg.idle == 0 {
		cfg.idle = defaultWatchIdle
	}
	return &metaFollower{cfg: cfg, following: make(chan struct{})}
}

// Following is closed once the replicas acted on metadata at or above the
// registration.
func (f *metaFollower) Following() <-chan struct{} { return f.following }

// state reports the registration index, the last applied index and whether
// a stream is up, with why the last one ended.
func (f *metaFollower) state() (registeredAt, applied uint64, connected bool, lastErr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gate.registeredAt, f.gate.applied, f.connected, f.lastErr
}

// run follows until ctx ends.
func (f *metaFollower) run(ctx context.Context) {
	reg, err := f.cfg.registration(ctx)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.gate.registeredAt = reg
	f.mu.Unlock()
	pace := backoff.Backoff{Min: 50 * time.Millisecond, Max: 2 * time.Second, Jitter: true}
	for ctx.Err() == nil {
		progressed := false
		for _, addr := range f.cfg.addrs() {
			n, err := f.follow(ctx, addr)
			progressed = progressed || n > 0
			if ctx.Err() != nil {
				return
			}
			f.mu.Lock()
			f.connected, f.lastErr = false, err.Error()
			applied := f.gate.applied
			f.mu.Unlock()
			f.cfg.log.Debug("metadata watch ended", "meta_node", addr, "from_index", applied, "err", err)
		}
		if progressed {
			pace.Reset()
		}
		if !pace.Wait(ctx) {
			return
		}
	}
}

// errStaleStream ends a stream that serves metadata the node must not act on.
type errStaleStream struct {
	index, registeredAt, applied uint64
}

func (e errStaleStream) Error() string {
	return fmt.Sprintf("meta node serves index %d, below this node's registration (%d) or applied index (%d)",
		e.index, e.registeredAt, e.applied)
}

// errIdleStream ends a stream that stayed silent too long: the meta node is
// paused or cut off, and another one should be followed.
type errIdleStream struct {
	addr string
	idle time.Duration
}

func (e errIdleStream) Error() string {
	return fmt.Sprintf("meta node %s sent neither a change nor a keepalive for %v", e.addr, e.idle)
}

// follow streams updates from one meta node until the stream fails, turns
// stale or stays silent for the idle timeout; it returns how many updates
// it applied and why it ended.
func (f *metaFollower) follow(ctx context.Context, addr string) (int, error) {
	f.mu.Lock()
	from := f.gate.applied
	f.mu.Unlock()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A paused meta node keeps its connections open and sends nothing; only
	// a timer notices.
	var silent atomic.Bool
	timer := time.AfterFunc(f.cfg.idle, func() { silent.Store(true); cancel() })
	defer timer.Stop()
	stream, err := f.cfg.open(sctx, addr, from)
	if err != nil {
		if silent.Load() {
			return 0, errIdleStream{addr: addr, idle: f.cfg.idle}
		}
		return 0, err
	}
	defer stream.Close()
	n := 0
	var parts metaimage.Assembly // an image's parts end with the stream
	for {
		u, err := stream.Recv()
		if err != nil {
			if silent.Load() {
				return n, errIdleStream{addr: addr, idle: f.cfg.idle}
			}
			return n, err
		}
		timer.Reset(f.cfg.idle)
		if u.GetKeepalive() {
			continue
		}
		if u, err = parts.Add(u); err != nil {
			return n, err
		}
		if u == nil {
			continue // more parts of an image to come
		}
		f.mu.Lock()
		v := f.gate.verdict(u)
		if v == verdictReconnect {
			stale := errStaleStream{index: u.GetIndex(), registeredAt: f.gate.registeredAt, applied: f.gate.applied}
			f.mu.Unlock()
			return n, stale
		}
		f.mu.Unlock()
		if v == verdictSkip {
			continue
		}
		// Only this goroutine applies, so the gate cannot move between the
		// verdict and markApplied.
		f.cfg.apply(u)
		f.mu.Lock()
		f.gate.markApplied(u)
		f.connected = true
		f.mu.Unlock()
		f.followingOnce.Do(func() { close(f.following) })
		n++
	}
}
