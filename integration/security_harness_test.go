package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/tlsconf"
	"github.com/floedb/floe/transport/tlsconf/tlstest"
)

// Security is a secure test cluster's CA, gossip key file and the
// certificates its clients sign in with.
type Security struct {
	CA        *tlstest.CA
	GossipKey string // the key file every node reads
	users     map[string]tlsconf.Files
}

func newSecurity(t testing.TB, dir string) *Security {
	t.Helper()
	ca := tlstest.NewCA(t, "floe test cluster")
	key, err := gossip.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := &Security{CA: ca, GossipKey: filepath.Join(dir, "gossip.key"), users: map[string]tlsconf.Files{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.GossipKey, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.users["admin"] = ca.User(t, "admin")
	return s
}

// nodeArgs are node id's security flags; none on a plaintext cluster.
func (s *Security) nodeArgs(t testing.TB, id uint32) []string {
	if s == nil {
		return nil
	}
	files := s.NodeFiles(t, id)
	return []string{"--tls-cert", files.Cert, "--tls-key", files.Key, "--tls-ca", files.CA,
		"--authorization", "--super-users", "user:admin", "--gossip-key-file", s.GossipKey}
}

// NodeFiles returns node id's certificate files, issuing them the first
// time.
func (s *Security) NodeFiles(t testing.TB, id uint32) tlsconf.Files {
	name := "node" + strconv.FormatUint(uint64(id), 10)
	if f, ok := s.users[name]; ok {
		return f
	}
	f := s.CA.Node(t, id)
	s.users[name] = f
	return f
}

// UserFiles returns user name's client certificate files, issuing them the
// first time.
func (s *Security) UserFiles(t testing.TB, name string) tlsconf.Files {
	if f, ok := s.users[name]; ok {
		return f
	}
	f := s.CA.User(t, name)
	s.users[name] = f
	return f
}

// clientArgs sign a CLI call in as admin; none on a plaintext cluster.
func (s *Security) clientArgs() []string {
	if s == nil {
		return nil
	}
	f := s.users["admin"]
	return []string{"--tls-ca", f.CA, "--tls-cert", f.Cert, "--tls-key", f.Key}
}

// Config is the SDK configuration of user name's client certificate.
func (s *Security) Config(t testing.TB, name string, addrs ...string) client.Config {
	f := s.UserFiles(t, name)
	tc, err := client.TLSFromFiles(f.CA, f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return client.Config{Addrs: addrs, TLS: tc}
}

// PasswordConfig is the SDK configuration of a user who signs in with a
// password, over TLS.
func (s *Security) PasswordConfig(t testing.TB, user, password string, addrs ...string) client.Config {
	tc, err := client.TLSFromFiles(s.CA.CAFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return client.Config{Addrs: addrs, TLS: tc, User: user, Password: password}
}
