package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/tlsconf"
)

// secureFiles are a secure cluster's certificates and gossip key, as the
// README's secure recipe makes them (floe cert): a CA, a certificate per
// node, the super-user admin's, and a gossip key file.
type secureFiles struct {
	dir       string
	gossipKey string
}

// certValidity is long enough for any run.
const certValidity = 7 * 24 * time.Hour

// makeSecureFiles writes the files of nodes whose addresses are hosts (by
// node id, from 1) under dir.
func makeSecureFiles(dir string, hosts []string) (*secureFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ca, err := tlsconf.NewCA("floe chaos CA", certValidity)
	if err != nil {
		return nil, err
	}
	s := &secureFiles{dir: dir, gossipKey: filepath.Join(dir, "gossip.key")}
	write := func(name string, data []byte) error { return os.WriteFile(filepath.Join(dir, name), data, 0o600) }
	if err := write("ca.crt", ca.CertPEM); err != nil {
		return nil, err
	}
	for i, host := range hosts {
		leaf, err := ca.IssueNode(uint32(i+1), []string{host}, certValidity)
		if err != nil {
			return nil, err
		}
		base := "node" + strconv.Itoa(i+1)
		if err := write(base+".crt", leaf.CertPEM); err != nil {
			return nil, err
		}
		if err := write(base+".key", leaf.KeyPEM); err != nil {
			return nil, err
		}
	}
	admin, err := ca.IssueUser("admin", certValidity)
	if err != nil {
		return nil, err
	}
	if err := write("user-admin.crt", admin.CertPEM); err != nil {
		return nil, err
	}
	if err := write("user-admin.key", admin.KeyPEM); err != nil {
		return nil, err
	}
	key, err := gossip.NewKey()
	if err != nil {
		return nil, err
	}
	return s, os.WriteFile(s.gossipKey, []byte(key+"\n"), 0o600)
}

// nodeArgs are the README recipe's security flags of node id.
func (s *secureFiles) nodeArgs(id int) []string {
	base := filepath.Join(s.dir, "node"+strconv.Itoa(id))
	return []string{"--tls-cert", base + ".crt", "--tls-key", base + ".key", "--tls-ca", filepath.Join(s.dir, "ca.crt"),
		"--authorization", "--super-users", "user:admin", "--gossip-key-file", s.gossipKey}
}

// connect signs in as admin with its certificate.
func (s *secureFiles) connect(ctx context.Context, addrs []string) (*client.Client, error) {
	tc, err := client.TLSFromFiles(filepath.Join(s.dir, "ca.crt"), filepath.Join(s.dir, "user-admin.crt"),
		filepath.Join(s.dir, "user-admin.key"))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return client.ConnectWith(ctx, client.Config{Addrs: addrs, TLS: tc})
}
