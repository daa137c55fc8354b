package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/floedb/floe/server/tablet"
	"github.com/floedb/floe/transport/pb"
)

// devConfig is a one-node cluster with both roles on loopback ports the
// system picks.
func devConfig(dir string) Config {
	return Config{NodeID: 1, Roles: []string{RoleMeta, RoleTablet}, DataDir: dir,
		Listen: "127.0.0.1:0", Gossip: "127.0.0.1:0", HTTP: "127.0.0.1:0", BootstrapExpect: 1}
}

// runNode runs a node until the test ends or stop is called; stop returns
// Run's error.
func runNode(t *testing.T, s *Server) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// appliedIndexes records the index of every metadata update the node's
// replicas are handed, from before Run on.
func appliedIndexes(s *Server) func() []uint64 {
	var mu sync.Mutex
	var seen []uint64
	s.onMetadata = func(u *pb.MetadataUpdate) {
		mu.Lock()
		seen = append(seen, u.GetIndex())
		mu.Unlock()
	}
	return func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]uint64(nil), seen...)
	}
}

// TestRestartedNodeActsOnNothingOlderThanItsRegistration: a meta+tablet
// node restarted on its folder holds metadata from its last run (including
// its old registration); its replicas must see nothing older than the
// registration of the new run, and it is ready only once they follow.
func TestRestartedNodeActsOnNothingOlderThanItsRegistration(t *testing.T) {
	dir := t.TempDir()
	for run := range 2 {
		s, err := New(devConfig(dir))
		if err != nil {
			t.Fatal(err)
		}
		seen := appliedIndexes(s)
		stop := runNode(t, s)
		select {
		case <-s.Ready():
		case <-t.Context().Done():
			t.Fatalf("run %d: never ready", run)
		}
		reg := s.registeredAt.Load()
		got := seen()
		if len(got) == 0 {
			t.Fatalf("run %d: ready before the replicas were handed any metadata", run)
		}
		for _, idx := range got {
			if idx < reg {
				t.Fatalf("run %d: replicas handed metadata at index %d, below the registration at %d (%d updates, first %v)",
					run, idx, reg, len(got), got[:min(len(got), 5)])
			}
		}
		if err := stop(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
}

// readyz asks the node's /readyz and returns the status code and reason.
func readyz(t *testing.T, s *Server) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Ready != (resp.StatusCode == http.StatusOK) {
		t.Fatalf("/readyz: status %d with ready=%v", resp.StatusCode, body.Ready)
	}
	return resp.StatusCode, body.Reason
}

// TestReadyWaitsForTheTabletToFollowMetadata: a registered node whose
// tablet has not acted on metadata from its registration on is not ready
// (a table created then would find no tablet node to place buckets on);
// it is once the tablet follows.
func TestReadyWaitsForTheTabletToFollowMetadata(t *testing.T) {
	s, err := New(devConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	open := s.watchOpen
	s.watchOpen = func(ctx context.Context, addr string, from uint64) (tablet.MetaStream, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return open(ctx, addr, from)
	}
	runNode(t, s)
	select {
	case <-s.registered:
	case <-t.Context().Done():
		t.Fatal("never registered")
	}
	select {
	case <-s.Ready():
		t.Fatal("ready before the tablet follows the metadata")
	default:
	}
	if code, why := readyz(t, s); code != http.StatusServiceUnavailable || !strings.Contains(why, "tablet has not acted on metadata") {
		t.Fatalf("/readyz before the tablet follows: %d %q", code, why)
	}
	close(release)
	select {
	case <-s.Ready():
	case <-t.Context().Done():
		t.Fatal("never ready")
	}
	if code, why := readyz(t, s); code != http.StatusOK {
		t.Fatalf("/readyz once ready: %d %q", code, why)
	}
}
