// Package tlstest makes certificates for tests: a CA in a temporary folder,
// and node and user certificates it signs, written as the files floe serve
// and the SDK read.
package tlstest

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/floedb/floe/transport/tlsconf"
)

// TB is what the helpers need of a *testing.T or *testing.B (this package
// does not import testing, as no package outside tests does).
type TB interface {
	Helper()
	Fatal(args ...any)
	TempDir() string
}

// validity of the test certificates.
const validity = 24 * time.Hour

// CA is a test cluster's certificate authority and the folder its files
// are in.
type CA struct {
	Dir string
	CA  *tlsconf.CA
	// CAFile is the CA certificate's file.
	CAFile string
}

// NewCA makes a CA named name in a temporary folder of t.
func NewCA(t TB, name string) *CA {
	t.Helper()
	ca, err := tlsconf.NewCA(name, validity)
	if err != nil {
		t.Fatal(err)
	}
	c := &CA{Dir: t.TempDir(), CA: ca}
	c.CAFile = c.write(t, "ca.crt", ca.CertPEM)
	c.write(t, "ca.key", ca.KeyPEM)
	return c
}

// Node issues node id's certificate (for 127.0.0.1 and localhost) and
// returns its files.
func (c *CA) Node(t TB, id uint32) tlsconf.Files {
	t.Helper()
	leaf, err := c.CA.IssueNode(id, []string{"127.0.0.1", "localhost"}, validity)
	if err != nil {
		t.Fatal(err)
	}
	return c.leafFiles(t, "node"+strconv.FormatUint(uint64(id), 10), leaf)
}

// User issues user name's client certificate and returns its files.
func (c *CA) User(t TB, name string) tlsconf.Files {
	t.Helper()
	leaf, err := c.CA.IssueUser(name, validity)
	if err != nil {
		t.Fatal(err)
	}
	return c.leafFiles(t, "user-"+name, leaf)
}

// Trust returns files with only the CA: a client that proves who it is with
// a password.
func (c *CA) Trust() tlsconf.Files { return tlsconf.Files{CA: c.CAFile} }

func (c *CA) leafFiles(t TB, base string, leaf tlsconf.Leaf) tlsconf.Files {
	return tlsconf.Files{
		Cert: c.write(t, base+".crt", leaf.CertPEM),
		Key:  c.write(t, base+".key", leaf.KeyPEM),
		CA:   c.CAFile,
	}
}

func (c *CA) write(t TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(c.Dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Source loads files, failing t if they do not load.
func Source(t TB, files tlsconf.Files) *tlsconf.Source {
	t.Helper()
	s, err := tlsconf.Load(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
