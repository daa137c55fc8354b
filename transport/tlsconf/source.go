package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/identity"
)

// Files names the PEM files of a TLS identity. Cert and Key go together;
// a client may leave both empty (it then proves who it is with a password).
type Files struct {
	// Cert is the certificate (chain), leaf first.
	Cert string
	// Key is the certificate's private key.
	Key string
	// CA holds the certificates of the CA that signs the cluster's
	// certificates: peers are trusted when theirs chains to one of them.
	CA string
}

// Validate reports the first inconsistent field.
func (f Files) Validate() error {
	switch {
	case (f.Cert == "") != (f.Key == ""):
		return pkgerr.New("tlsconf", "--tls-cert and --tls-key go together: give both or neither")
	case f.CA == "" && f.Cert != "":
		return pkgerr.New("tlsconf", "--tls-ca is required with --tls-cert: it says which certificates to trust")
	}
	return nil
}

// Enabled reports whether any TLS file is named.
func (f Files) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// reloadCheckInterval is how often the files are checked for changes, at
// most: a handshake checks them when the last check is older.
const reloadCheckInterval = time.Second

// Source is a TLS identity read from Files and read again when a file
// changes (its size or modification time), checked at most once a second,
// on the next handshake. A change that does not load (a half-written file,
// a key that does not match) keeps the last good identity and is logged;
// the next change is tried again.
type Source struct {
	files Files
	log   *slog.Logger
	now   func() time.Time

	mu        sync.Mutex
	checked   time.Time
	stamps    [3]fileStamp // Cert, Key, CA as last seen
	cur       *material
	badStamps [3]fileStamp // the change that last failed to load, logged once
}

// fileStamp identifies a version of a file.
type fileStamp struct {
	size    int64
	modTime time.Time
}

// material is one loaded version of the files, with the configurations
// made from it.
type material struct {
	cert *tls.Certificate   // nil: no certificate (a client with a password)
	self identity.Principal // who cert says this is
	pool *x509.CertPool
	// server configurations by client authentication mode, made once per
	// version so session resumption keeps working between reloads of
	// nothing.
	server map[ClientAuth]*tls.Config
}

// Load reads files, which must load: a node that cannot use its
// certificates does not start.
func Load(files Files, logger *slog.Logger) (*Source, error) {
	if err := files.Validate(); err != nil {
		return nil, err
	}
	if files.CA == "" {
		return nil, pkgerr.New("tlsconf", "no CA file: TLS needs --tls-ca")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Source{files: files, log: logger, now: time.Now}
	stamps, err := s.stat()
	if err != nil {
		return nil, err
	}
	m, err := loadMaterial(files)
	if err != nil {
		return nil, err
	}
	s.cur, s.stamps, s.checked = m, stamps, s.now()
	return s, nil
}

// Identity returns the principal of this side's certificate; Anonymous
// without one.
func (s *Source) Identity() identity.Principal { return s.current().self }

// current returns the newest loadable version of the files.
func (s *Source) current() *material {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.checked) < reloadCheckInterval {
		return s.cur
	}
	s.checked = now
	stamps, err := s.stat()
	if err != nil || stamps == s.stamps {
		if err != nil && stamps != s.badStamps {
			s.badStamps = stamps
			s.log.Warn("TLS files unreadable; keeping the certificates loaded before", "error", err)
		}
		return s.cur
	}
	m, err := loadMaterial(s.files)
	if err != nil {
		if stamps != s.badStamps {
			s.badStamps = stamps
			s.log.Warn("TLS files changed but do not load; keeping the certificates loaded before", "error", err)
		}
		return s.cur
	}
	s.cur, s.stamps = m, stamps
	s.log.Info("TLS files reloaded", "cert", s.files.Cert, "ca", s.files.CA, "identity", m.self.String())
	return m
}

// stat returns the stamps of the files (zero for unnamed ones).
func (s *Source) stat() ([3]fileStamp, error) {
	var out [3]fileStamp
	for i, name := range []string{s.files.Cert, s.files.Key, s.files.CA} {
		if name == "" {
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return out, pkgerr.Errorf("tlsconf", "%w", err)
		}
		out[i] = fileStamp{size: fi.Size(), modTime: fi.ModTime()}
	}
	return out, nil
}

// loadMaterial reads and checks the files.
func loadMaterial(files Files) (*material, error) {
	m := &material{server: map[ClientAuth]*tls.Config{}}
	caPEM, err := os.ReadFile(files.CA)
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "CA: %w", err)
	}
	m.pool = x509.NewCertPool()
	if !m.pool.AppendCertsFromPEM(caPEM) {
		return nil, pkgerr.Errorf("tlsconf", "CA %s holds no PEM certificate", files.CA)
	}
	if files.Cert != "" {
		cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
		if err != nil {
			return nil, pkgerr.Errorf("tlsconf", "certificate %s with key %s: %w", files.Cert, files.Key, err)
		}
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: m.pool, Intermediates: intermediates(cert.Certificate[1:]),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return nil, pkgerr.Errorf("tlsconf", "certificate %s is not signed by the CA in %s: %w", files.Cert, files.CA, err)
		}
		if m.self, err = identity.FromCertificate(cert.Leaf); err != nil {
			return nil, pkgerr.Errorf("tlsconf", "certificate %s: %w", files.Cert, err)
		}
		m.cert = &cert
	}
	for _, mode := range []ClientAuth{ClientAuthNone, ClientAuthRequest, ClientAuthRequire} {
		m.server[mode] = m.serverConfig(mode)
	}
	return m, nil
}

// intermediates parses the DER certificates after a chain's leaf.
func intermediates(ders [][]byte) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, der := range ders {
		if c, err := x509.ParseCertificate(der); err == nil {
			pool.AddCert(c)
		}
	}
	return pool
}
