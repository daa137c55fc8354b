package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/identity"
)

// CA is a certificate authority for a cluster: it signs node and user
// certificates. Keys are ECDSA P-256.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM and KeyPEM are the CA as files hold it.
	CertPEM, KeyPEM []byte
}

// Leaf is an issued certificate and its key, PEM encoded.
type Leaf struct {
	CertPEM, KeyPEM []byte
}

// NewCA makes a self-signed CA named name, valid for validity from an hour
// ago (clocks of a cluster differ a little).
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "CA key: %w", err)
	}
	tmpl, err := template(name, validity)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "CA certificate: %w", err)
	}
	keyPEM, err := keyToPEM(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: certToPEM(der), KeyPEM: keyPEM}, nil
}

// ParseCA reads a CA from its PEM certificate and key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "CA certificate and key: %w", err)
	}
	if !pair.Leaf.IsCA {
		return nil, pkgerr.New("tlsconf", "the certificate is not a CA certificate")
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, pkgerr.New("tlsconf", "the CA key cannot sign")
	}
	return &CA{Cert: pair.Leaf, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// IssueNode issues node id's certificate, usable to serve and to dial
// (nodes are each other's clients), with hosts (DNS names or IP addresses)
// as further SANs for tools that check them.
func (ca *CA) IssueNode(id uint32, hosts []string, validity time.Duration) (Leaf, error) {
	if id == 0 {
		return Leaf{}, pkgerr.New("tlsconf", "a node id is a positive integer")
	}
	tmpl, err := template("floe node "+strconv.FormatUint(uint64(id), 10), validity)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.URIs = []*url.URL{identity.NodeURI(id)}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	return ca.issue(tmpl)
}

// IssueUser issues user name's client certificate.
func (ca *CA) IssueUser(name string, validity time.Duration) (Leaf, error) {
	if err := identity.ValidUserName(name); err != nil {
		return Leaf{}, err
	}
	tmpl, err := template(name, validity)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.URIs = []*url.URL{identity.UserURI(name)}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tmpl)
}

func (ca *CA) issue(tmpl *x509.Certificate) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, pkgerr.Errorf("tlsconf", "key: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Leaf{}, pkgerr.Errorf("tlsconf", "certificate: %w", err)
	}
	keyPEM, err := keyToPEM(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{CertPEM: certToPEM(der), KeyPEM: keyPEM}, nil
}

// template is a certificate valid from an hour ago for validity, with a
// random serial number.
func template(commonName string, validity time.Duration) (*x509.Certificate, error) {
	if validity <= 0 {
		return nil, pkgerr.Errorf("tlsconf", "validity %v must be positive", validity)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"Floe"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}, nil
}

func certToPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyToPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, pkgerr.Errorf("tlsconf", "key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
