package gossip

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/floedb/floe/internal/pkgerr"
)

// subscriberBuffer is how many events a subscriber may have pending;
// further events for it are dropped (see Subscribe).
const subscriberBuffer = 64

// Gossip is this node's membership of the gossip pool.
type Gossip struct {
	cfg         Config
	timings     timings
	logger      *slog.Logger
	meta        []byte
	forgetAfter time.Duration
	ml          *memberlist.Memberlist
	stop        context.CancelFunc // stops run
	wg          sync.WaitGroup

	// lifeMu serialises Leave and Close, so memberlist's Leave never runs
	// after its Shutdown. Never taken inside mu or by memberlist callbacks.
	lifeMu sync.Mutex

	// mu guards the fields below. memberlist calls the delegates with its
	// own lock held and takes mu inside it: never call memberlist with mu
	// held.
	keyring *memberlist.Keyring // nil: not encrypted

	mu      sync.Mutex
	members map[uint32]Member
	subs    map[chan Event]struct{}
	closed  bool
	left    bool
}

// New starts memberlist on cfg.BindAddress and, if cfg.Join is not empty,
// starts joining those nodes in the background. Close releases it.
func New(cfg Config) (*Gossip, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Roles = slices.Clone(cfg.Roles)
	cfg.Join = slices.Clone(cfg.Join)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t, _ := profileTimings(cfg.Profile)
	meta, _ := cfg.meta().encode()
	g := &Gossip{
		cfg:         cfg,
		timings:     t,
		logger:      cfg.Logger.With("component", "gossip"),
		meta:        meta,
		forgetAfter: orDefault(cfg.ForgetAfter, DefaultForgetAfter),
		members:     make(map[uint32]Member),
		subs:        make(map[chan Event]struct{}),
	}
	mc := cfg.memberlistConfig(t)
	d := &delegate{g: g}
	mc.Delegate, mc.Events, mc.Alive, mc.Merge, mc.Conflict = d, d, d, d, d
	mc.Logger = newMemberlistLogger(cfg.Logger)
	if cfg.KeyFile != "" {
		keys, err := LoadKeyFile(cfg.KeyFile)
		if err != nil {
			return nil, err
		}
		if mc.Keyring, err = keyring(keys); err != nil {
			return nil, err
		}
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	g.keyring = mc.Keyring
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, pkgerr.Errorf("gossip", "start memberlist on %s: %w", cfg.BindAddress, err)
	}
	g.ml = ml
	ctx, stop := context.WithCancel(context.Background())
	g.stop = stop
	g.wg.Go(func() { g.run(ctx) })
	if cfg.KeyFile != "" {
		g.wg.Go(func() { g.watchKeys(ctx) })
	}
	g.logger.Info("gossip started", "node_id", cfg.NodeID, "gossip_address", g.Address(), "profile", orDefault(cfg.Profile, ProfileLAN))
	return g, nil
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Address is this node's advertised gossip address (ip:port).
func (g *Gossip) Address() string { return g.ml.LocalNode().Address() }

// Join contacts the gossip nodes at addrs until it is in touch with at
// least one other live member, retrying with backoff until ctx ends. It
// returns how many of addrs answered the last attempt. One attempt to an
// unreachable address can take the profile's TCP timeout (LAN: 10 s,
// local: 1 s) whatever ctx says.
func (g *Gossip) Join(ctx context.Context, addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, pkgerr.New("gossip", "join: no addresses")
	}
	backoff := g.timings.joinBackoffMin
	var timer *time.Timer
	for attempt := 1; ; attempt++ {
		if err := g.usable(); err != nil {
			return 0, err
		}
		n, err := g.ml.Join(addrs)
		if n > 0 && g.ml.NumMembers() > 1 {
			return n, nil
		}
		if err == nil {
			err = errors.New("reached no other member")
		}
		g.logger.Debug("join failed, will retry", "addresses", addrs, "attempt", attempt, "backoff", backoff, "err", err)
		if timer == nil {
			timer = time.NewTimer(backoff)
			defer timer.Stop()
		} else {
			timer.Reset(backoff)
		}
		select {
		case <-ctx.Done():
			return 0, pkgerr.Errorf("gossip", "join %v: %w (last attempt: %v)", addrs, ctx.Err(), err)
		case <-timer.C:
		}
		backoff = min(2*backoff, g.timings.joinBackoffMax)
	}
}

// usable reports ErrClosed or ErrLeft.
func (g *Gossip) usable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return ErrClosed
	case g.left:
		return ErrLeft
	}
	return nil
}

// run joins cfg.Join, then keeps asking dead members to rejoin until ctx
// ends.
func (g *Gossip) run(ctx context.Context) {
	if len(g.cfg.Join) > 0 {
		n, err := g.Join(ctx, g.cfg.Join)
		if err != nil {
			g.logger.Debug("background join stopped", "err", err)
			return
		}
		g.logger.Info("joined", "addresses", g.cfg.Join, "answered", n)
	}
	ticker := time.NewTicker(g.timings.reconnectInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			g.reconnect()
		}
	}
}

// reconnect tries to join one dead member at random. memberlist forgets a
// dead node after a while and never contacts it again; without this, two
// sides of a partition that lasted longer would stay apart for good.
func (g *Gossip) reconnect() {
	var dead []Member
	for _, m := range g.Members() {
		if m.State == StateDead && m.NodeID != g.cfg.NodeID {
			dead = append(dead, m)
		}
	}
	if len(dead) == 0 || g.usable() != nil {
		return
	}
	m := dead[rand.IntN(len(dead))]
	if _, err := g.ml.Join([]string{m.GossipAddress}); err != nil {
		g.logger.Debug("dead member still unreachable", "node_id", m.NodeID, "gossip_address", m.GossipAddress, "err", err)
		return
	}
	g.logger.Info("reached dead member again", "node_id", m.NodeID, "gossip_address", m.GossipAddress)
}

// Members returns every member this node knows, itself included, sorted by
// node id. Dead and left members stay listed with their state until
// ForgetAfter has passed; a node that is not listed is unknown and is to
// be treated like a dead one.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetLocked(time.Now())
	out := make([]Member, 0, len(g.members))
	for _, m := range g.members {
		m.Roles = slices.Clone(m.Roles)
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}

// Member returns one member as Members would.
func (g *Gossip) Member(id uint32) (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetLocked(time.Now())
	m, ok := g.members[id]
	m.Roles = slices.Clone(m.Roles)
	return m, ok
}

// forgetLocked drops dead and left members older than forgetAfter.
func (g *Gossip) forgetLocked(now time.Time) {
	for id, m := range g.members {
		if m.State != StateAlive && now.Sub(m.Since) > g.forgetAfter {
			delete(g.members, id)
		}
	}
}

// Subscribe returns a channel of membership events and a function that
// ends the subscription (and closes the channel); Close closes it too.
//
// Each subscriber has a buffer of 64 events. When it is full, newer events
// for that subscriber are dropped rather than holding up gossip. Events are
// therefore a wake-up, not a log: on any event, re-read Members (or
// Member), which is always current. A full buffer means an event is still
// pending, so a subscriber that drains its channel and re-reads Members
// never misses the latest state, only intermediate steps.
func (g *Gossip) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, subscriberBuffer)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		close(ch)
		return ch, func() {}
	}
	g.subs[ch] = struct{}{}
	return ch, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if _, ok := g.subs[ch]; ok {
			delete(g.subs, ch)
			close(ch)
		}
	}
}

// Leave announces to the pool that this node is leaving, waiting up to
// timeout (0: no limit) for the announcement to go out; the others then
// list it as StateLeft rather than StateDead. The node keeps answering
// probes until Close. Leave may be called again, after a timeout for
// instance; it never rejoins.
//
// The announcement is two broadcasts: first this node's meta with the
// leaving flag (memberlist's UpdateNode), then memberlist's own leave.
// memberlist alone cannot tell others a leave from a failure: v0.7.0
// reports both through NotifyLeave with the same Node state.
func (g *Gossip) Leave(timeout time.Duration) error {
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	g.mu.Lock()
	closed, left := g.closed, g.left
	if !closed && !left {
		g.left = true
		leaving := g.cfg.meta()
		leaving.Leaving = true
		g.meta, _ = leaving.encode() // same size as the meta New checked
	}
	g.mu.Unlock()
	if closed {
		return ErrClosed
	}
	g.stop()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if !left {
		// On a timeout the update stays queued: a second Leave goes on
		// with memberlist's leave.
		if err := g.ml.UpdateNode(remaining(deadline)); err != nil {
			return pkgerr.Errorf("gossip", "leave: announce: %w", err)
		}
	}
	if err := g.ml.Leave(remaining(deadline)); err != nil {
		return pkgerr.Errorf("gossip", "leave: %w", err)
	}
	g.logger.Info("left the pool", "node_id", g.cfg.NodeID)
	return nil
}

// remaining is the time left until deadline, 0 for no deadline and at
// least a nanosecond otherwise (memberlist reads 0 as "no limit").
func remaining(deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return 0
	}
	return max(time.Until(deadline), time.Nanosecond)
}

// Close stops memberlist without announcing anything: unless Leave was
// called first, the others find this node dead. It waits for the
// goroutines Gossip started (a join attempt in flight can hold it up to
// the profile's TCP timeout) and closes every subscription. memberlist
// does not wait for its own timer callbacks; any that fire after Close
// are ignored.
func (g *Gossip) Close() error {
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	subs := g.subs
	g.subs = nil
	g.mu.Unlock()

	g.stop()
	g.wg.Wait()
	err := g.ml.Shutdown()
	for ch := range subs {
		close(ch)
	}
	if err != nil {
		return pkgerr.Errorf("gossip", "shutdown: %w", err)
	}
	return nil
}
