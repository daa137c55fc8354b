package server

import (
	"os"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/server/meta"
)

// RecoverMeta makes voters the whole metadata group of the stopped meta
// node nodeID whose data folder is dataDir, and returns the configuration
// its Raft state held before. It is the way back for a cluster that lost
// its quorum for good; raftmeta.Recover says when that is safe. The node
// then starts as usual and, with a quorum of voters running, elects a
// leader again.
func RecoverMeta(dataDir string, nodeID uint32, voters []raftmeta.Server) (before []raftmeta.Server, err error) {
	if st, err := os.Stat(dataDir); err != nil || !st.IsDir() {
		return nil, pkgerr.Errorf("server", "recover: no data folder at %s", dataDir)
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return nil, pkgerr.Errorf("server", "recover: %w; stop the node first", err)
	}
	defer unlockDataDir(lock)
	dir := meta.Dir(dataDir)
	before, err = raftmeta.Configuration(dir, nodeID)
	if err != nil {
		return nil, pkgerr.Errorf("server", "recover: %w (is %s the data folder of a meta node, and is the node stopped?)", err, dataDir)
	}
	if err := raftmeta.Recover(dir, nodeID, voters); err != nil {
		return before, err
	}
	return before, nil
}
