package raftmeta

import (
	"path/filepath"
	"slices"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta/metastate"
)

// Recover rewrites the stopped node's Raft state in dir so that its
// configuration is exactly voters, whatever it was: the way back for a
// group that lost its quorum for good (hashicorp/raft's RecoverCluster).
// The state machine is brought to the end of the node's log, every entry
// included, committed or not; a snapshot at that index records the new
// configuration and the log is emptied. The node then starts as usual.
//
// It is safe only when the voters left out are gone for good: one that
// comes back still believes in the old configuration and may elect a
// leader of its own. Entries only the lost voters had are lost. Run it on
// every node of voters with the same list, never on two sides of a split.
// voters must include nodeID.
func Recover(dir string, nodeID uint32, voters []Server) error {
	if !slices.ContainsFunc(voters, func(v Server) bool { return v.ID == nodeID }) {
		return pkgerr.Errorf("raftmeta", "recover: the voters must include this node (%d)", nodeID)
	}
	var conf raft.Configuration
	for _, v := range voters {
		if v.ID == 0 || v.Address == "" {
			return pkgerr.Errorf("raftmeta", "recover: voter %d at %q: want a node id and an address", v.ID, v.Address)
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: ServerID(v.ID), Address: raft.ServerAddress(v.Address), Suffrage: raft.Voter})
	}
	has, err := HasState(dir)
	if err != nil {
		return err
	}
	if !has {
		return pkgerr.Errorf("raftmeta", "recover: %s holds no Raft state: nothing to recover", dir)
	}
	cfg := Config{NodeID: nodeID, Dir: dir}.withDefaults()
	state, err := metastate.Open(filepath.Join(dir, "state.db"), cfg.Logger)
	if err != nil {
		return err
	}
	defer state.Close()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return pkgerr.Errorf("raftmeta", "recover: open raft log: %w", err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, newHCLog(cfg.Logger, "snapshots"))
	if err != nil {
		return pkgerr.Errorf("raftmeta", "recover: snapshot store: %w", err)
	}
	// RecoverCluster needs a transport only to encode peers for old
	// snapshot versions; nothing is sent.
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	var applyErr error
	f := &fsm{state: state, failed: func(err error) { applyErr = err }}
	if err := raft.RecoverCluster(cfg.raftConfig(), f, store, store, snaps, trans, conf); err != nil {
		return pkgerr.Errorf("raftmeta", "recover: %w", err)
	}
	if applyErr != nil {
		return pkgerr.Errorf("raftmeta", "recover: %w: %v", ErrStateMachineFailed, applyErr)
	}
	return nil
}

// Configuration reads the voters and non-voters that the stopped node's
// Raft state in dir records, without starting Raft.
func Configuration(dir string, nodeID uint32) ([]Server, error) {
	has, err := HasState(dir)
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, pkgerr.Errorf("raftmeta", "%s holds no Raft state", dir)
	}
	cfg := Config{NodeID: nodeID, Dir: dir}.withDefaults()
	state, err := metastate.Open(filepath.Join(dir, "state.db"), cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer state.Close()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, pkgerr.Errorf("raftmeta", "open raft log: %w", err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, newHCLog(cfg.Logger, "snapshots"))
	if err != nil {
		return nil, pkgerr.Errorf("raftmeta", "snapshot store: %w", err)
	}
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	rc := cfg.raftConfig()
	c, err := raft.GetConfiguration(rc, &fsm{state: state, failed: func(error) {}}, store, store, snaps, trans)
	if err != nil {
		return nil, pkgerr.Errorf("raftmeta", "read configuration: %w", err)
	}
	var out []Server
	for _, s := range c.Servers {
		out = append(out, Server{ID: parseServerID(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}
