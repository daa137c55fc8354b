package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/identity"
)

// ClientAuth is what a node asks of the callers that connect to it
// (--tls-client-auth). Nodes always present their certificates to each
// other; the mode is about clients.
type ClientAuth uint8

// Client authentication modes.
const (
	// ClientAuthRequest asks every caller for a certificate and verifies it
	// when one is sent; a caller without one proves who it is with a
	// password (SCRAM) before anything else. The default.
	ClientAuthRequest ClientAuth = iota
	// ClientAuthRequire refuses, in the TLS handshake, every caller
	// without a certificate of the CA.
	ClientAuthRequire
	// ClientAuthNone asks nobody for a certificate: traffic is encrypted
	// but no caller is identified, nodes included, so nothing can be
	// refused to anybody. Not allowed with authorization.
	ClientAuthNone
)

// ParseClientAuth reads a --tls-client-auth value.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch s {
	case "", "request":
		return ClientAuthRequest, nil
	case "require":
		return ClientAuthRequire, nil
	case "none":
		return ClientAuthNone, nil
	}
	return 0, pkgerr.Errorf("tlsconf", "--tls-client-auth %q: want none, request or require", s)
}

func (a ClientAuth) String() string {
	switch a {
	case ClientAuthRequire:
		return "require"
	case ClientAuthNone:
		return "none"
	default:
		return "request"
	}
}

// tlsMode is the crypto/tls setting of a mode.
func (a ClientAuth) tlsMode() tls.ClientAuthType {
	switch a {
	case ClientAuthRequire:
		return tls.RequireAndVerifyClientCert
	case ClientAuthNone:
		return tls.NoClientCert
	default:
		return tls.VerifyClientCertIfGiven
	}
}

// serverConfig is the configuration one handshake of a node uses.
func (m *material) serverConfig(mode ClientAuth) *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: mode.tlsMode(),
		ClientCAs:  m.pool,
	}
	if m.cert != nil {
		cfg.Certificates = []tls.Certificate{*m.cert}
	}
	return cfg
}

// ServerConfig returns the configuration a node serves its port with: TLS
// 1.3, the newest loadable certificate and CA, callers asked for
// certificates as mode says. The source must hold a certificate.
func (s *Source) ServerConfig(mode ClientAuth) (*tls.Config, error) {
	if s.current().cert == nil {
		return nil, pkgerr.New("tlsconf", "a node needs a certificate: --tls-cert and --tls-key")
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current().server[mode], nil
		},
	}, nil
}

// ErrNotANode is returned when the peer dialed presents a certificate of
// the CA that is not a node certificate.
var ErrNotANode = pkgerr.New("tlsconf", "the peer's certificate is not a node certificate")

// ClientConfig returns the configuration to dial a node with: TLS 1.3,
// this side's certificate when it has one, and the peer required to
// present a node certificate of the CA (VerifyNode). The host name is not
// checked (see the package doc).
func (s *Source) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Verification is VerifyConnection's, against the CA as it is at
		// the handshake, not a pool fixed now.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if c := s.current().cert; c != nil {
				return c, nil
			}
			return &tls.Certificate{}, nil // none: the node may ask for a password
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := s.VerifyNode(cs.PeerCertificates)
			return err
		},
	}
}

// VerifyNode checks that chain (leaf first) is signed by the CA, may serve
// and be a client, and names a node; it returns the node.
func (s *Source) VerifyNode(chain []*x509.Certificate) (identity.Principal, error) {
	p, err := s.verify(chain, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return identity.Principal{}, err
	}
	if !p.IsNode() {
		return identity.Principal{}, pkgerr.Errorf("tlsconf", "%w: it names %s", ErrNotANode, p)
	}
	return p, nil
}

// verify checks chain against the current CA for usage, and returns the
// principal its leaf names.
func (s *Source) verify(chain []*x509.Certificate, usage x509.ExtKeyUsage) (identity.Principal, error) {
	if len(chain) == 0 {
		return identity.Principal{}, pkgerr.New("tlsconf", "the peer presented no certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range chain[1:] {
		pool.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: s.current().pool, Intermediates: pool,
		KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			return identity.Principal{}, pkgerr.Errorf("tlsconf", "the peer's certificate %q is not signed by this cluster's CA (%s)",
				chain[0].Subject.CommonName, s.files.CA)
		}
		return identity.Principal{}, pkgerr.Errorf("tlsconf", "the peer's certificate %q: %w", chain[0].Subject.CommonName, err)
	}
	return identity.FromCertificate(chain[0])
}

// PeerIdentity returns the principal a server-side connection's verified
// client certificate names; Anonymous when the caller sent none.
func PeerIdentity(cs tls.ConnectionState) (identity.Principal, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return identity.Principal{}, nil
	}
	return identity.FromCertificate(cs.PeerCertificates[0])
}
