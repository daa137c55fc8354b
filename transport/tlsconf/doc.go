// Package tlsconf builds the TLS configurations of Floe's one port: TLS
// 1.3, a node certificate and key, and the cluster's CA, read from PEM
// files and read again when they change on disk, so a certificate is
// rotated by replacing its files, without a restart.
//
// A node serves with ServerConfig: it presents its node certificate and,
// depending on ClientAuth, asks callers for theirs (verified against the
// CA). It dials other nodes, and clients dial it, with ClientConfig: the
// peer must present a certificate of the CA that is a node certificate
// (identity.FromCertificate). The host name is not checked: the CA is the
// cluster's own, and a node is whoever holds one of its node certificates,
// whatever address it is reached at (containers, NAT, IP changes).
//
// Certificates for a test cluster (a CA, node and user certificates) come
// from NewCA and CA.Issue; `floe cert` writes them to files.
package tlsconf
