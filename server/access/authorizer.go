package access

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"storj.io/drpc"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
)

// Catalog names tables by id, for the tablet RPCs that carry ids.
type Catalog interface {
	// TableName returns the database and name of table id; false when the
	// node does not know it.
	TableName(id uint64) (database, table string, ok bool)
}

// Authorizer is a node's transport.Authorizer: the rules, and the policy
// of the moment, which SetACLs replaces when the ACLs change.
type Authorizer struct {
	on         bool
	super      []identity.Principal
	catalog    Catalog
	writerKeys WriterKeys // nil: writer ids are not bound
	policy     atomic.Pointer[Policy]
}

// Config configures an Authorizer.
type Config struct {
	// On turns authorization on: ACLs decide, no match refuses. Off, every
	// authenticated caller may make every call not for nodes only.
	On bool
	// SuperUsers may make every call.
	SuperUsers []identity.Principal
	// Catalog names the tables of tablet requests; nil: a node without
	// the tablet role, which serves none.
	Catalog Catalog
	// WriterKeys, when set, binds writer ids to the principals that
	// allocated them (writer.go).
	WriterKeys WriterKeys
}

// New returns an authorizer with no ACL entries yet.
func New(cfg Config) *Authorizer {
	a := &Authorizer{on: cfg.On, super: cfg.SuperUsers, catalog: cfg.Catalog, writerKeys: cfg.WriterKeys}
	a.policy.Store(NewPolicy(cfg.On, cfg.SuperUsers, nil))
	return a
}

// SetACLs makes entries the ACLs calls are decided by, from the next call
// on.
func (a *Authorizer) SetACLs(entries []*pb.AclEntry) {
	a.policy.Store(NewPolicy(a.on, a.super, entries))
}

// Policy returns the policy of the moment.
func (a *Authorizer) Policy() *Policy { return a.policy.Load() }

type caller = transport.Caller

var _ transport.Authorizer = (*Authorizer)(nil)

// AuthorizeCall refuses unknown RPCs, and those for nodes only to anybody
// else.
func (a *Authorizer) AuthorizeCall(c caller, rpc string) error {
	r, ok := rules[rpc]
	switch {
	case !ok:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "%s: no access rule for this call", rpc)
	case r.nodesOnly && !c.Principal.IsNode():
		return a.nodesOnly(c, rpcName(rpc))
	}
	return nil
}

// AuthorizeRequest checks a request message against its RPC's rule.
func (a *Authorizer) AuthorizeRequest(_ context.Context, c caller, rpc string, req drpc.Message) error {
	r, ok := rules[rpc]
	if !ok {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "%s: no access rule for this call", rpc)
	}
	if r.nodesOnly || r.check == nil || c.Principal.IsNode() {
		return nil // AuthorizeCall decided
	}
	return r.check(a, c, req)
}

// need checks that c may do op on r.
func (a *Authorizer) need(c caller, op pb.AclOperation, r Resource) error {
	d := a.policy.Load().Check(c.Principal, c.Addr, op, r)
	if d.Allowed {
		return nil
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "%s may not %s %s: %s", c.Principal, OperationName(op), r, d.Why)
}

// needTable is need for a table named by id.
func (a *Authorizer) needTable(c caller, op pb.AclOperation, id uint64) error {
	if a.catalog == nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "this node serves no tables")
	}
	db, table, ok := a.catalog.TableName(id)
	if !ok {
		// Not known here yet (just created) or dropped: the caller
		// refreshes its metadata and retries, as for any table the node
		// does not know. Never let an unchecked request through.
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "table %d is not known on this node yet", id)
	}
	return a.need(c, op, Table(db, table))
}

func (a *Authorizer) nodesOnly(c caller, what string) error {
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "%s is for nodes of the cluster only; %s is not one", what, c.Principal)
}

func (a *Authorizer) refuse(c caller, format string, args ...any) error {
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "%s: %s", c.Principal, fmt.Sprintf(format, args...))
}

// rpcName shortens "/floe.v1.Meta/Join" to "Meta.Join".
func rpcName(rpc string) string {
	return strings.Replace(strings.TrimPrefix(rpc, "/floe.v1."), "/", ".", 1)
}

// RuleDocs maps every RPC the rules cover ("Meta.Join") to what it needs
// ("nodes only"), as docs/security.md lists them.
func RuleDocs() map[string]string {
	out := make(map[string]string, len(rules))
	for rpc, r := range rules {
		out[rpcName(rpc)] = r.doc
	}
	return out
}
