package gossip

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeKeys writes a key file of keys (base64 lines) atomically.
func writeKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func newKey(t *testing.T) string {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// waitKeys waits until g's keyring holds n keys.
func waitKeys(t *testing.T, g *Gossip, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for g.KeyCount() != n {
		if time.Now().After(deadline) {
			t.Fatalf("node %d holds %d keys, want %d", g.cfg.NodeID, g.KeyCount(), n)
		}
		time.Sleep(20 * time.Millisecond) // the file is looked at once a second
	}
}

// cannotJoin checks that cfg's node does not get into the pool of target.
func cannotJoin(t *testing.T, cfg Config, target *Gossip) {
	t.Helper()
	g := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := g.Join(ctx, []string{target.Address()}); err == nil {
		t.Fatalf("node %d joined with the wrong key", cfg.NodeID)
	}
	if slices.ContainsFunc(target.Members(), func(m Member) bool { return m.NodeID == cfg.NodeID }) {
		t.Fatalf("node %d is a member of a pool whose key it does not hold", cfg.NodeID)
	}
}

func TestGossipKeyRotation(t *testing.T) {
	dir := t.TempDir()
	oldKey, newK := newKey(t), newKey(t)
	file := func(id int) string { return filepath.Join(dir, "node"+string(rune('0'+id))+".keys") }
	var nodes []*Gossip
	for id := 1; id <= 2; id++ {
		writeKeys(t, file(id), oldKey)
		cfg := testConfig(t, uint32(id))
		cfg.KeyFile = file(id)
		if id > 1 {
			cfg.Join = []string{nodes[0].Address()}
		}
		nodes = append(nodes, start(t, cfg))
	}
	for _, g := range nodes {
		waitMembers(t, g, "both alive", func(ms []Member) bool { return len(ms) == 2 })
	}

	t.Run("without a key", func(t *testing.T) {
		cannotJoin(t, testConfig(t, 8), nodes[0])
	})
	t.Run("with another key", func(t *testing.T) {
		writeKeys(t, filepath.Join(dir, "stranger.keys"), newKey(t))
		cfg := testConfig(t, 9)
		cfg.KeyFile = filepath.Join(dir, "stranger.keys")
		cannotJoin(t, cfg, nodes[0])
	})

	// Add the new key, use it, remove the old one: the pool stays whole.
	for step, keys := range [][]string{{oldKey, newK}, {newK, oldKey}, {newK}} {
		for id := 1; id <= 2; id++ {
			writeKeys(t, file(id), keys...)
		}
		for _, g := range nodes {
			waitKeys(t, g, len(keys))
			waitMembers(t, g, "both alive after rotation step "+string(rune('1'+step)), func(ms []Member) bool {
				return len(ms) == 2 && !slices.ContainsFunc(ms, func(m Member) bool { return m.State != StateAlive })
			})
		}
	}
	// Only the new key opens the pool now.
	writeKeys(t, filepath.Join(dir, "late.keys"), newK)
	late := testConfig(t, 3)
	late.KeyFile, late.Join = filepath.Join(dir, "late.keys"), []string{nodes[1].Address()}
	start(t, late)
	waitMembers(t, nodes[0], "node 3 joined with the new key", func(ms []Member) bool { return len(ms) == 3 })
	writeKeys(t, filepath.Join(dir, "retired.keys"), oldKey)
	retired := testConfig(t, 4)
	retired.KeyFile = filepath.Join(dir, "retired.keys")
	cannotJoin(t, retired, nodes[0])
}

func TestGossipKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ content, want string }{
		{"", "holds no key"},
		{"# only a comment\n", "holds no key"},
		{"not base64!\n", "not base64"},
		{"c2hvcnQ=\n", "a 5-byte key"},
	} {
		path := filepath.Join(dir, "keys")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKeyFile(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.content, err, tc.want)
		}
	}
}
