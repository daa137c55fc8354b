package gossip

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/floedb/floe/internal/pkgerr"
)

// Gossip is encrypted with memberlist's keyring: AES-GCM with a key of 16,
// 24 or 32 bytes, every message verified on the way in and out, so a
// process without a key can neither join nor read. Config.KeyFile holds
// the keys, base64, one per line ('#' starts a comment); the first line is
// the key that encrypts, the others are only accepted. The file is read
// again when it changes, so a key is rotated without a restart:
//
//  1. add the new key as a second line on every node (all accept it);
//  2. move it to the first line on every node (all encrypt with it);
//  3. remove the old line on every node.
//
// Each step must reach every node before the next starts.

// keyCheckInterval is how often the key file is looked at for changes.
const keyCheckInterval = time.Second

// NewKey returns a new random 32-byte key, base64, as a key file holds it.
func NewKey() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

// LoadKeyFile reads a key file: at least one key, the first the primary.
func LoadKeyFile(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, pkgerr.Errorf("gossip", "key file: %w", err)
	}
	return parseKeys(path, data)
}

func parseKeys(path string, data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, pkgerr.Errorf("gossip", "key file %s line %d: not base64 (make keys with floe cert gossip-key)", path, n)
		}
		if l := len(k); l != 16 && l != 24 && l != 32 {
			return nil, pkgerr.Errorf("gossip", "key file %s line %d: a %d-byte key; want 16, 24 or 32 bytes", path, n, l)
		}
		if !slices.ContainsFunc(keys, func(o []byte) bool { return bytes.Equal(o, k) }) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, pkgerr.Errorf("gossip", "key file %s holds no key", path)
	}
	return keys, nil
}

// keyring makes memberlist's keyring of keys, the first primary.
func keyring(keys [][]byte) (*memberlist.Keyring, error) {
	kr, err := memberlist.NewKeyring(keys[1:], keys[0])
	if err != nil {
		return nil, pkgerr.Errorf("gossip", "keyring: %w", err)
	}
	return kr, nil
}

// UseKeys makes keys the keyring: new keys are added, the first is used to
// encrypt, keys not listed are removed.
func (g *Gossip) UseKeys(keys [][]byte) error {
	kr := g.keyring
	if kr == nil {
		return pkgerr.New("gossip", "gossip was started without encryption: restart with --gossip-key-file to encrypt it")
	}
	for _, k := range keys {
		if err := kr.AddKey(k); err != nil {
			return pkgerr.Errorf("gossip", "add key: %w", err)
		}
	}
	if err := kr.UseKey(keys[0]); err != nil {
		return pkgerr.Errorf("gossip", "use key: %w", err)
	}
	for _, k := range kr.GetKeys() {
		if !slices.ContainsFunc(keys, func(o []byte) bool { return bytes.Equal(o, k) }) {
			if err := kr.RemoveKey(k); err != nil {
				return pkgerr.Errorf("gossip", "remove key: %w", err)
			}
		}
	}
	return nil
}

// KeyCount returns how many keys the keyring holds; 0 without encryption.
func (g *Gossip) KeyCount() int {
	if kr := g.keyring; kr != nil {
		return len(kr.GetKeys())
	}
	return 0
}

// watchKeys reads the key file again when it changes and applies it. A
// file that does not load keeps the keys in use, and is logged once.
func (g *Gossip) watchKeys(ctx context.Context) {
	path := g.cfg.KeyFile
	last, _ := os.ReadFile(path)
	var bad []byte
	ticker := time.NewTicker(keyCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		data, err := os.ReadFile(path)
		if err != nil || bytes.Equal(data, last) || bytes.Equal(data, bad) {
			continue
		}
		keys, err := parseKeys(path, data)
		if err == nil {
			err = g.UseKeys(keys)
		}
		if err != nil {
			bad = data
			g.logger.Warn("gossip key file changed but does not load; keeping the keys in use", "file", path, "err", err)
			continue
		}
		last = data
		g.logger.Info("gossip keys reloaded", "file", path, "keys", len(keys))
	}
}
