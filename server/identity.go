package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/pkgerr"
)

const identityFile = "node.json"

// identity is what a data folder remembers about who it belongs to. The
// incarnation is created once per folder: a wiped folder is a new
// incarnation of the node, which the cluster must not mistake for the old one.
type identity struct {
	NodeID      uint32 `json:"node_id"`
	Incarnation string `json:"incarnation"`
	ClusterID   string `json:"cluster_id,omitempty"`
}

// loadIdentity reads the folder's identity, creating it on first use.
func loadIdentity(dir string, nodeID uint32) (*identity, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, pkgerr.Errorf("server", "%w", err)
	}
	buf, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		id := &identity{NodeID: nodeID, Incarnation: newID()}
		return id, id.save(dir)
	}
	if err != nil {
		return nil, pkgerr.Errorf("server", "%w", err)
	}
	var id identity
	if err := json.Unmarshal(buf, &id); err != nil {
		return nil, pkgerr.Errorf("server", "%s is damaged: %v", filepath.Join(dir, identityFile), err)
	}
	if id.NodeID != nodeID {
		return nil, pkgerr.Errorf("server", "data folder %s belongs to node %d, not %d", dir, id.NodeID, nodeID)
	}
	return &id, nil
}

// save writes the identity durably (temp file, fsync, rename, fsync folder).
func (id *identity) save(dir string) error {
	buf, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, identityFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return pkgerr.Errorf("server", "%w", err)
	}
	if _, err := f.Write(append(buf, '\n')); err != nil {
		f.Close()
		return pkgerr.Errorf("server", "%w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return pkgerr.Errorf("server", "%w", err)
	}
	if err := f.Close(); err != nil {
		return pkgerr.Errorf("server", "%w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, identityFile)); err != nil {
		return pkgerr.Errorf("server", "%w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return pkgerr.Errorf("server", "%w", err)
	}
	defer d.Close()
	return d.Sync()
}

// newID returns 16 random bytes in hex.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
