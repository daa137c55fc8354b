package tablet

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/transport/pb"
)

func TestAdmit(t *testing.T) {
	for _, tc := range []struct {
		update, registration uint64
		want                 bool
	}{
		{update: 5, registration: 0, want: false},  // not registered: nothing
		{update: 9, registration: 10, want: false}, // older than the registration
		{update: 10, registration: 10, want: true}, // the registration itself
		{update: 11, registration: 10, want: true},
	} {
		if got := admit(tc.update, tc.registration); got != tc.want {
			t.Errorf("admit(%d, %d) = %v, want %v", tc.update, tc.registration, got, tc.want)
		}
	}
}

func image(index uint64) *pb.MetadataUpdate  { return &pb.MetadataUpdate{Index: index, Full: true} }
func change(index uint64) *pb.MetadataUpdate { return &pb.MetadataUpdate{Index: index} }

func TestWatchGateVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		registeredAt, applied uint64
		update                *pb.MetadataUpdate
		want                  watchVerdict
	}{
		{"image before registration is known", 0, 0, image(7), verdictReconnect},
		{"image older than the registration", 10, 0, image(9), verdictReconnect},
		{"image at the registration", 10, 0, image(10), verdictApply},
		{"first change without an image", 10, 0, change(11), verdictReconnect},
		{"next change", 10, 12, change(13), verdictApply},
		{"repeated change", 10, 12, change(12), verdictSkip},
		{"change older than the registration, after an image", 10, 12, change(9), verdictSkip},
		{"image from a meta node behind what was applied", 10, 14, image(12), verdictReconnect},
		{"newer image", 10, 14, image(20), verdictApply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := watchGate{registeredAt: tc.registeredAt, applied: tc.applied}
			if got := g.verdict(tc.update); got != tc.want {
				t.Fatalf("verdict(%v) = %v, want %v", tc.update, got, tc.want)
			}
		})
	}
}

// fakeStream serves a fixed list of updates, then ends with io.EOF.
type fakeStream struct {
	updates []*pb.MetadataUpdate
	closed  bool
}

func (s *fakeStream) Recv() (*pb.MetadataUpdate, error) {
	if len(s.updates) == 0 {
		return nil, io.EOF
	}
	u := s.updates[0]
	s.updates = s.updates[1:]
	return u, nil
}

func (s *fakeStream) Close() error { s.closed = true; return nil }

// recordingFollower is a follower over fake meta nodes that records what it
// applies and the from index of every watch it opens.
type recordingFollower struct {
	*metaFollower
	mu      sync.Mutex
	applied []uint64
	opens   []string // "addr@from"
	changed chan struct{}
}

func newRecordingFollower(serve func(addr string, from uint64) []*pb.MetadataUpdate,
	registration func(context.Context) (uint64, error)) *recordingFollower {
	r := &recordingFollower{changed: make(chan struct{}, 1000)}
	r.metaFollower = newMetaFollower(metaFollowerConfig{
		addrs: func() []string { return []string{"lagging", "current"} },
		open: func(_ context.Context, addr string, from uint64) (MetaStream, error) {
			r.mu.Lock()
			r.opens = append(r.opens, addr)
			r.mu.Unlock()
			r.changed <- struct{}{}
			return &fakeStream{updates: serve(addr, from)}, nil
		},
		apply: func(u *pb.MetadataUpdate) {
			r.mu.Lock()
			r.applied = append(r.applied, u.GetIndex())
			r.mu.Unlock()
			r.changed <- struct{}{}
		},
		registration: registration,
	})
	return r
}

// waitFor waits until cond holds, checking after every open and apply,
// for at most 10 s.
func (r *recordingFollower) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	giveUp := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-giveUp:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// TestWatchActsOnNothingOlderThanRegistration: a meta node that has not
// applied the registration yet serves an image (and changes) from before
// it; the follower must drop that stream and act only from a stream at or
// above the registration, then resume from its last index.
func TestWatchActsOnNothingOlderThanRegistration(t *testing.T) {
	const registeredAt = 10
	serve := func(addr string, from uint64) []*pb.MetadataUpdate {
		if addr == "lagging" {
			if from == 0 {
				return []*pb.MetadataUpdate{image(7), change(8), change(9), change(10)}
			}
			return nil // a lagging node has nothing newer to say
		}
		if from == 0 {
			return []*pb.MetadataUpdate{image(12), change(13), change(13), change(14)}
		}
		return []*pb.MetadataUpdate{change(from), change(from + 1)}
	}
	f := newRecordingFollower(serve, func(context.Context) (uint64, error) { return registeredAt, nil })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()

	f.waitFor(t, "the follower to resume after index 15", func() bool { return len(f.applied) >= 4 })
	cancel()
	<-done
	want := []uint64{12, 13, 14, 15}
	for i, idx := range f.applied[:4] {
		if idx < registeredAt {
			t.Fatalf("applied index %d, below the registration at %d (applied %v)", idx, registeredAt, f.applied)
		}
		if idx != want[i] {
			t.Fatalf("applied %v, want it to start with %v", f.applied, want)
		}
	}
	select {
	case <-f.Following():
	default:
		t.Fatal("Following not closed after applying the image at the registration")
	}
	if reg, applied, _, _ := f.state(); reg != registeredAt || applied < 15 {
		t.Fatalf("state: registered at %d, applied %d", reg, applied)
	}
}

// TestWatchStartsAfterRegistration: no watch opens, and so nothing is
// applied, until the registration is committed.
func TestWatchStartsAfterRegistration(t *testing.T) {
	asked := make(chan struct{})
	release := make(chan struct{})
	registration := func(ctx context.Context) (uint64, error) {
		close(asked)
		select {
		case <-release:
			return 3, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	serve := func(string, uint64) []*pb.MetadataUpdate { return []*pb.MetadataUpdate{image(5)} }
	f := newRecordingFollower(serve, registration)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()

	select {
	case <-asked:
	case <-f.changed:
		t.Fatalf("the follower opened a watch before its registration was committed: %v", f.opens)
	}
	f.mu.Lock()
	opened := len(f.opens)
	f.mu.Unlock()
	if opened != 0 {
		t.Fatalf("opened %d watches while the registration is pending", opened)
	}
	select {
	case <-f.Following():
		t.Fatal("following before the registration")
	default:
	}
	close(release)
	f.waitFor(t, "the image to be applied", func() bool { return len(f.applied) > 0 })
	<-f.Following()
	cancel()
	<-done
}

func TestWatchEndsWhenRegistrationNeverComes(t *testing.T) {
	f := newRecordingFollower(nil, func(ctx context.Context) (uint64, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f.run(ctx) // returns: nothing to follow
	if len(f.opens) != 0 {
		t.Fatalf("opened %v without a registration", f.opens)
	}
}

// pausedStream serves its updates, then says nothing until its context
// ends: a meta node stopped by SIGSTOP keeps its connections open and never
// answers again.
type pausedStream struct {
	ctx     context.Context
	updates []*pb.MetadataUpdate
}

func (s *pausedStream) Recv() (*pb.MetadataUpdate, error) {
	if len(s.updates) > 0 {
		u := s.updates[0]
		s.updates = s.updates[1:]
		return u, nil
	}
	<-s.ctx.Done()
	return nil, s.ctx.Err()
}

func (s *pausedStream) Close() error { return nil }

// TestWatchLeavesASilentMetaNode: the meta node a tablet follows is paused
// after serving an image; the follower must give up on the silent stream
// and follow another meta node from where it was, or the tablet would never
// hear of the leader elected in the paused node's place.
func TestWatchLeavesASilentMetaNode(t *testing.T) {
	var mu sync.Mutex
	var applied []uint64
	var opens []string
	changed := make(chan struct{}, 100)
	f := newMetaFollower(metaFollowerConfig{
		addrs: func() []string { return []string{"paused", "live"} },
		open: func(ctx context.Context, addr string, from uint64) (MetaStream, error) {
			mu.Lock()
			opens = append(opens, fmt.Sprintf("%s@%d", addr, from))
			mu.Unlock()
			if addr == "paused" {
				return &pausedStream{ctx: ctx, updates: []*pb.MetadataUpdate{image(5)}}, nil
			}
			return &pausedStream{ctx: ctx, updates: []*pb.MetadataUpdate{change(from + 1)}}, nil
		},
		apply: func(u *pb.MetadataUpdate) {
			mu.Lock()
			applied = append(applied, u.GetIndex())
			mu.Unlock()
			changed <- struct{}{}
		},
		registration: func(context.Context) (uint64, error) { return 5, nil },
		idle:         50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	giveUp := time.After(10 * time.Second)
	for {
		mu.Lock()
		n := len(applied)
		mu.Unlock()
		if n >= 2 {
			break
		}
		select {
		case <-changed:
		case <-giveUp:
			t.Fatalf("the follower stayed on the paused meta node: opened %v, applied %v", opens, applied)
		}
	}
	cancel()
	<-done
	if !slices.Equal(applied[:2], []uint64{5, 6}) || !slices.Equal(opens[:2], []string{"paused@0", "live@5"}) {
		t.Fatalf("opened %v, applied %v; want paused@0 then live@5, applying 5 then 6", opens, applied)
	}
	if _, _, _, lastErr := f.state(); !strings.Contains(lastErr, "neither a change nor a keepalive") {
		t.Fatalf("last watch error %q does not say the stream went silent", lastErr)
	}
}

// TestWatchIgnoresKeepalives: keepalives carry the index of the last
// change the meta node has; the follower neither applies them nor lets them
// move its gate.
func TestWatchIgnoresKeepalives(t *testing.T) {
	keepalive := func(index uint64) *pb.MetadataUpdate { return &pb.MetadataUpdate{Index: index, Keepalive: true} }
	serve := func(addr string, from uint64) []*pb.MetadataUpdate {
		if addr != "current" {
			return nil
		}
		if from == 0 {
			return []*pb.MetadataUpdate{keepalive(0), image(12), keepalive(12), keepalive(12), change(13), keepalive(13)}
		}
		return []*pb.MetadataUpdate{keepalive(from), change(from + 1)}
	}
	f := newRecordingFollower(serve, func(context.Context) (uint64, error) { return 10, nil })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	f.waitFor(t, "the follower to resume after index 13", func() bool { return len(f.applied) >= 3 })
	cancel()
	<-done
	if want := []uint64{12, 13, 14}; !slices.Equal(f.applied[:3], want) {
		t.Fatalf("applied %v, want it to start with %v", f.applied, want)
	}
}

// TestWatchActsOnWholeImages: the replicas get an image sent in parts only
// once its last part came, as one image; a stream that ends in the middle
// of one gives them none of it, and the next stream starts again from the
// index applied before.
func TestWatchActsOnWholeImages(t *testing.T) {
	part := func(index uint64, bucket int32, more bool) *pb.MetadataUpdate {
		return &pb.MetadataUpdate{Index: index, Full: true, More: more, Buckets: []*pb.BucketRecord{{TableId: 1, Bucket: bucket}}}
	}
	var mu sync.Mutex
	var froms []uint64
	serve := func(addr string, from uint64) []*pb.MetadataUpdate {
		mu.Lock()
		defer mu.Unlock()
		froms = append(froms, from)
		switch len(froms) {
		case 1:
			return []*pb.MetadataUpdate{part(5, 0, true), part(5, 1, true), part(5, 2, false), change(6)}
		case 2:
			return []*pb.MetadataUpdate{part(8, 0, true), part(8, 1, true)} // ends mid-image
		}
		return []*pb.MetadataUpdate{change(from + 1)}
	}
	var images []*pb.MetadataUpdate
	f := newRecordingFollower(serve, func(context.Context) (uint64, error) { return 1, nil })
	apply := f.cfg.apply
	f.cfg.apply = func(u *pb.MetadataUpdate) {
		if u.GetFull() {
			mu.Lock()
			images = append(images, u)
			mu.Unlock()
		}
		apply(u)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	f.waitFor(t, "the change after the broken image", func() bool { return slices.Contains(f.applied, 7) })
	cancel()
	<-done
	if want := []uint64{5, 6, 7}; !slices.Equal(f.applied[:3], want) {
		t.Fatalf("applied %v, want it to start with %v", f.applied, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(images) != 1 || len(images[0].GetBuckets()) != 3 || images[0].GetMore() {
		t.Fatalf("images applied: %v, want the one at index 5 with its 3 buckets", images)
	}
	if froms[2] != 6 {
		t.Fatalf("watches opened from %v: after the broken image, want 6 again", froms)
	}
}
