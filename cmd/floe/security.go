package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/floedb/floe/server"
	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/tlsconf"
)

// securityFlags are floe serve's security flags.
type securityFlags struct {
	cert, key, ca *string
	clientAuth    *string
	authorization *bool
	superUsers    *string
	gossipKeyFile *string
}

func defineSecurityFlags(fs *flag.FlagSet) *securityFlags {
	f := &securityFlags{}
	f.cert = fs.String("tls-cert", "", "this node's certificate (floe cert node): the port then speaks TLS 1.3 only, Raft and DRPC alike")
	f.key = fs.String("tls-key", "", "the key of --tls-cert")
	f.ca = fs.String("tls-ca", "", "the cluster's CA certificate: peers and clients are trusted when theirs chain to it")
	f.clientAuth = new(string)
	choiceVar(fs, f.clientAuth, "tls-client-auth", "request", []string{"none", "request", "require"},
		"what callers show: request (a certificate or a password), require (a certificate), none (nobody is identified)")
	f.authorization = fs.Bool("authorization", false, "refuse every call no ACL allows (floe acl); needs TLS")
	f.superUsers = fs.String("super-users", "", "comma-separated principals allowed everything (user:admin,...); needs --authorization")
	f.gossipKeyFile = fs.String("gossip-key-file", "", "encrypt gossip with the keys in this file (floe cert gossip-key): base64, one per line, the first encrypts; read again when it changes")
	return f
}

// config turns the flags into the node's security settings.
func (f *securityFlags) config() (server.Config, error) {
	var cfg server.Config
	cfg.TLS = tlsconf.Files{Cert: *f.cert, Key: *f.key, CA: *f.ca}
	mode, err := tlsconf.ParseClientAuth(*f.clientAuth)
	if err != nil {
		return cfg, fmt.Errorf("%w: %v", errUsage, err)
	}
	cfg.TLSClientAuth = mode
	cfg.Authorization = *f.authorization
	for _, s := range splitList(*f.superUsers) {
		p, err := identity.Parse(s)
		if err != nil {
			return cfg, fmt.Errorf("%w: --super-users: %v", errUsage, err)
		}
		cfg.SuperUsers = append(cfg.SuperUsers, p)
	}
	cfg.GossipKeyFile = *f.gossipKeyFile
	return cfg, nil
}

// warnPlaintext warns at start of a node that listens beyond loopback
// without TLS: anybody who reaches its port owns the cluster.
func warnPlaintext(log *slog.Logger, listen string, cfg server.Config) {
	if cfg.TLS.Cert != "" && cfg.GossipKeyFile != "" {
		return
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || ip != nil && ip.IsLoopback()
	if loopback {
		return
	}
	if cfg.TLS.Cert == "" {
		log.Warn("listening beyond loopback without TLS: anybody who reaches this port can read, write and administer the cluster; see docs/security.md",
			"listen", listen)
	}
	if cfg.GossipKeyFile == "" {
		log.Warn("gossip is not encrypted: anybody who reaches the gossip port can join it; see --gossip-key-file in docs/security.md")
	}
}
