package server

import (
	"context"
	"crypto/tls"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/access"
	"github.com/floedb/floe/transport"
	authid "github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/tlsconf"
)

// security is a node's side of who may call it: its TLS identity, and the
// users, ACLs, tables and writer key of the metadata, kept current so the
// handler chain decides each call from memory. The metadata comes from the
// node's own state when it is a meta node (followLocalState), and from its
// metadata watch otherwise (the tablet role's updates); either way a
// change reaches the node within its apply or watch latency, which is what
// makes a revoked ACL refuse the next call.
type security struct {
	tls   *tlsconf.Source    // nil: plaintext
	authz *access.Authorizer // nil: nobody is asked who they are

	users     atomic.Pointer[map[string]*pb.UserRecord]
	writerKey atomic.Pointer[[]byte]

	mu     sync.RWMutex
	tables map[uint64][2]string // id → database, name

	authFailures *prometheus.CounterVec
}

// newSecurity loads the node's TLS files and checks that its certificate
// is this node's.
func newSecurity(cfg Config) (*security, error) {
	sec := &security{tables: map[uint64][2]string{}}
	empty := map[string]*pb.UserRecord{}
	sec.users.Store(&empty)
	sec.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_auth_failures_total",
		Help: "Failed authentications, by reason: bad_credentials, rate_limited, unauthenticated_call, bad_certificate."},
		[]string{"reason"})
	for _, reason := range []string{"bad_credentials", "rate_limited", "unauthenticated_call", "bad_certificate"} {
		sec.authFailures.WithLabelValues(reason) // listed at 0 from the start
	}
	if !cfg.TLS.Enabled() {
		return sec, nil
	}
	src, err := tlsconf.Load(cfg.TLS, cfg.Logger)
	if err != nil {
		return nil, pkgerr.Errorf("server", "%w", err)
	}
	if want := authid.NodePrincipal(cfg.NodeID); src.Identity() != want {
		return nil, pkgerr.Errorf("server", "--tls-cert %s is %s's certificate, not this node's (%s): issue one with floe cert node --id %d",
			cfg.TLS.Cert, src.Identity(), want, cfg.NodeID)
	}
	sec.tls = src
	if cfg.TLSClientAuth != tlsconf.ClientAuthNone {
		sec.authz = access.New(access.Config{On: cfg.Authorization, SuperUsers: cfg.SuperUsers, Catalog: sec, WriterKeys: sec})
	}
	return sec, nil
}

// dialTLS is the configuration the node dials its peers with; nil:
// plaintext.
func (sec *security) dialTLS() *tls.Config {
	if sec.tls == nil {
		return nil
	}
	return sec.tls.ClientConfig()
}

// transportSecurity is the handler chain's configuration.
func (sec *security) transportSecurity() transport.Security {
	if sec.authz == nil {
		return transport.Security{}
	}
	return transport.Security{
		Authenticate:  true,
		Credentials:   sec.credentials,
		Authorizer:    sec.authz,
		OnAuthFailure: func(reason string) { sec.authFailures.WithLabelValues(reason).Inc() },
	}
}

// credentials returns a user's SCRAM credentials.
func (sec *security) credentials(name string) (*pb.UserRecord, bool) {
	u, ok := (*sec.users.Load())[name]
	return u, ok
}

// WriterKey returns the cluster's writer key; nil until known.
func (sec *security) WriterKey() []byte {
	if k := sec.writerKey.Load(); k != nil {
		return *k
	}
	return nil
}

// TableName names a table by id (access.Catalog).
func (sec *security) TableName(id uint64) (string, string, bool) {
	sec.mu.RLock()
	defer sec.mu.RUnlock()
	n, ok := sec.tables[id]
	return n[0], n[1], ok
}

// apply takes one metadata update: a full image replaces everything.
func (sec *security) apply(u *pb.MetadataUpdate) {
	users := map[string]*pb.UserRecord{}
	if !u.GetFull() {
		for name, rec := range *sec.users.Load() {
			users[name] = rec
		}
	}
	for _, rec := range u.GetUsers() {
		users[rec.GetName()] = rec
	}
	for _, name := range u.GetDroppedUsers() {
		delete(users, name)
	}
	if u.GetFull() || len(u.GetUsers())+len(u.GetDroppedUsers()) > 0 {
		sec.users.Store(&users)
	}
	if k := u.GetWriterKey(); k != nil {
		sec.writerKey.Store(&k)
	}
	if u.GetAclsSet() && sec.authz != nil {
		sec.authz.SetACLs(u.GetAcls())
	}
	sec.mu.Lock()
	if u.GetFull() {
		sec.tables = map[uint64][2]string{}
	}
	for _, t := range u.GetTables() {
		sec.tables[t.GetId()] = [2]string{t.GetDatabase(), t.GetName()}
	}
	// A partition's data is its table's: the ACLs of the table apply.
	for _, p := range u.GetPartitions() {
		if n, ok := sec.tables[p.GetTableId()]; ok {
			sec.tables[p.GetId()] = n
		}
	}
	for _, id := range u.GetDroppedTables() {
		delete(sec.tables, id)
	}
	for _, id := range u.GetDroppedPartitions() {
		delete(sec.tables, id)
	}
	sec.mu.Unlock()
}

// followLocalState keeps sec current with a meta node's own state, until
// ctx ends or the state closes.
func (sec *security) followLocalState(ctx context.Context, st *metastate.State) {
	var applied uint64
	resync := true
	for {
		if resync {
			img, err := st.Image()
			if err != nil {
				return // closed
			}
			sec.apply(img)
			applied, resync = img.GetIndex(), false
		}
		next, err := st.WaitApplied(ctx, applied)
		if err != nil {
			return
		}
		updates, ok := st.Changes(applied)
		if !ok {
			resync = true // behind the feed, or a restored snapshot
			continue
		}
		for _, u := range updates {
			sec.apply(u)
			applied = max(applied, u.GetIndex())
		}
		applied = max(applied, next)
	}
}
