// Package identity names who is on the other end of a connection: a node of
// the cluster, a user, or nobody yet. Principals come from certificates
// (a node certificate's URI, a client certificate's URI or common name) or
// from a SCRAM exchange (a user name); authorization rules and ACLs are
// written against them.
//
// # Certificates
//
// A node certificate carries the URI SAN floe://node/<id>: the node id it
// was issued for. Nodes prove who they are with it to each other (Raft,
// internal RPCs) and to clients. A client certificate carries
// floe://user/<name>, or, when it has no floe:// URI, its subject's common
// name is the user name, so certificates made by other tools work too.
// Trust comes from the cluster's CA (floe serve --tls-ca): it should sign
// only this cluster's certificates.
package identity

import (
	"crypto/x509"
	"net/url"
	"strconv"
	"strings"

	"github.com/floedb/floe/internal/pkgerr"
)

// Kind is what a principal is.
type Kind uint8

// Kinds of principal.
const (
	// Anonymous: nobody has been identified (no certificate, no SCRAM
	// exchange yet), or security is off.
	Anonymous Kind = iota
	// Node: a node of the cluster, proven by a node certificate.
	Node
	// User: a client, proven by a client certificate or a password.
	User
)

// Principal is who a call comes from. The zero value is Anonymous.
type Principal struct {
	Kind Kind
	// NodeID is set for Node principals.
	NodeID uint32
	// Name is set for User principals.
	Name string
}

// NodePrincipal returns the principal of node id.
func NodePrincipal(id uint32) Principal { return Principal{Kind: Node, NodeID: id} }

// UserPrincipal returns the principal of user name.
func UserPrincipal(name string) Principal { return Principal{Kind: User, Name: name} }

// IsNode reports whether p is a node of the cluster.
func (p Principal) IsNode() bool { return p.Kind == Node }

// IsAnonymous reports whether nobody has been identified.
func (p Principal) IsAnonymous() bool { return p.Kind == Anonymous }

// String is the principal as ACLs and logs write it: "node:3",
// "user:alice", "anonymous".
func (p Principal) String() string {
	switch p.Kind {
	case Node:
		return "node:" + strconv.FormatUint(uint64(p.NodeID), 10)
	case User:
		return "user:" + p.Name
	default:
		return "anonymous"
	}
}

// Parse reads a principal as String writes it ("user:alice", "node:3").
// "anonymous" is refused: no rule is written for nobody.
func Parse(s string) (Principal, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return Principal{}, pkgerr.Errorf("identity", "principal %q: want user:NAME or node:ID", s)
	}
	switch kind {
	case "user":
		if err := ValidUserName(rest); err != nil {
			return Principal{}, err
		}
		return UserPrincipal(rest), nil
	case "node":
		id, err := strconv.ParseUint(rest, 10, 32)
		if err != nil || id == 0 {
			return Principal{}, pkgerr.Errorf("identity", "principal %q: a node id is a positive integer", s)
		}
		return NodePrincipal(uint32(id)), nil
	}
	return Principal{}, pkgerr.Errorf("identity", "principal %q: want user:NAME or node:ID", s)
}

// MaxUserNameBytes bounds a user name.
const MaxUserNameBytes = 128

// ValidUserName checks a user name: 1 to 128 bytes of printable ASCII
// without spaces, commas or colons (lists and principals are written with
// them).
func ValidUserName(name string) error {
	if name == "" || len(name) > MaxUserNameBytes {
		return pkgerr.Errorf("identity", "user name %q: want 1 to %d bytes", name, MaxUserNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c > '~' || c == ',' || c == ':' {
			return pkgerr.Errorf("identity", "user name %q: only printable ASCII without spaces, commas or colons", name)
		}
	}
	return nil
}

// URI scheme and hosts of the identities certificates carry.
const (
	uriScheme = "floe"
	uriNode   = "node"
	uriUser   = "user"
)

// NodeURI is the URI SAN of node id's certificate.
func NodeURI(id uint32) *url.URL {
	return &url.URL{Scheme: uriScheme, Host: uriNode, Path: "/" + strconv.FormatUint(uint64(id), 10)}
}

// UserURI is the URI SAN of user name's client certificate.
func UserURI(name string) *url.URL {
	return &url.URL{Scheme: uriScheme, Host: uriUser, Path: "/" + name}
}

// FromCertificate returns the principal a verified certificate proves. A
// certificate with a floe:// URI SAN is what it says; one without is a user
// named by its subject's common name. A certificate naming neither, or
// more than one identity, proves nothing.
func FromCertificate(cert *x509.Certificate) (Principal, error) {
	var found []Principal
	for _, u := range cert.URIs {
		if u.Scheme != uriScheme {
			continue
		}
		p, err := fromURI(u)
		if err != nil {
			return Principal{}, err
		}
		found = append(found, p)
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return Principal{}, pkgerr.Errorf("identity", "certificate %q names %d Floe identities; it may name one", cert.Subject.CommonName, len(found))
	}
	if cn := cert.Subject.CommonName; cn != "" {
		if err := ValidUserName(cn); err != nil {
			return Principal{}, pkgerr.Errorf("identity", "certificate common name: %w", err)
		}
		return UserPrincipal(cn), nil
	}
	return Principal{}, pkgerr.New("identity", "certificate names no identity: no floe:// URI and no common name")
}

func fromURI(u *url.URL) (Principal, error) {
	name := strings.TrimPrefix(u.Path, "/")
	switch u.Host {
	case uriNode:
		id, err := strconv.ParseUint(name, 10, 32)
		if err != nil || id == 0 {
			return Principal{}, pkgerr.Errorf("identity", "certificate URI %q: a node id is a positive integer", u)
		}
		return NodePrincipal(uint32(id)), nil
	case uriUser:
		if err := ValidUserName(name); err != nil {
			return Principal{}, pkgerr.Errorf("identity", "certificate URI %q: %w", u, err)
		}
		return UserPrincipal(name), nil
	}
	return Principal{}, pkgerr.Errorf("identity", "certificate URI %q: want floe://node/ID or floe://user/NAME", u)
}
