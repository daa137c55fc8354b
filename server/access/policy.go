package access

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
)

// Resource is what a call touches.
type Resource struct {
	Type pb.AclResourceType
	// Database is set for databases and tables, Table for tables.
	Database, Table string
}

// Cluster is the cluster resource.
var Cluster = Resource{Type: pb.AclResourceType_ACL_RESOURCE_CLUSTER}

// Database returns database name's resource.
func Database(name string) Resource {
	return Resource{Type: pb.AclResourceType_ACL_RESOURCE_DATABASE, Database: name}
}

// Table returns table database.name's resource.
func Table(database, name string) Resource {
	return Resource{Type: pb.AclResourceType_ACL_RESOURCE_TABLE, Database: database, Table: name}
}

func (r Resource) String() string {
	switch r.Type {
	case pb.AclResourceType_ACL_RESOURCE_DATABASE:
		return "database " + r.Database
	case pb.AclResourceType_ACL_RESOURCE_TABLE:
		return "table " + r.Database + "." + r.Table
	default:
		return "the cluster"
	}
}

// OperationName is how an operation is written in ACLs and messages.
func OperationName(op pb.AclOperation) string {
	name := strings.TrimPrefix(op.String(), "ACL_OPERATION_")
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// Policy is the ACL entries and super-users a node decides with. It is
// immutable: a change of the ACLs makes a new one.
type Policy struct {
	// on: authorization is on (no match refuses); off: every
	// authenticated caller is allowed what is not for nodes only.
	on    bool
	super map[identity.Principal]bool
	// byPrincipal holds the entries of each principal string; anyUser
	// those written for "user:*".
	byPrincipal map[string][]*pb.AclEntry
	anyUser     []*pb.AclEntry
}

// NewPolicy returns a policy: with on, the entries and super-users decide;
// without, everybody authenticated is allowed.
func NewPolicy(on bool, superUsers []identity.Principal, entries []*pb.AclEntry) *Policy {
	p := &Policy{on: on, super: map[identity.Principal]bool{}, byPrincipal: map[string][]*pb.AclEntry{}}
	for _, s := range superUsers {
		p.super[s] = true
	}
	for _, e := range entries {
		if e.GetPrincipal() == "user:*" {
			p.anyUser = append(p.anyUser, e)
			continue
		}
		p.byPrincipal[e.GetPrincipal()] = append(p.byPrincipal[e.GetPrincipal()], e)
	}
	return p
}

// Decision is a policy's answer.
type Decision struct {
	Allowed bool
	// Why says what decided: the entry that denied, or that none allowed.
	Why string
}

// Check decides whether caller (at addr) may do op on r.
func (p *Policy) Check(caller identity.Principal, addr netip.Addr, op pb.AclOperation, r Resource) Decision {
	switch {
	case caller.IsNode():
		return Decision{Allowed: true, Why: "a node of the cluster"}
	case caller.IsAnonymous():
		return Decision{Why: "the caller is not authenticated"}
	case !p.on:
		return Decision{Allowed: true, Why: "authorization is off"}
	case p.super[caller]:
		return Decision{Allowed: true, Why: "a super-user"}
	}
	var allowedBy *pb.AclEntry
	entries := p.byPrincipal[caller.String()]
	if caller.Kind == identity.User {
		entries = append(entries[:len(entries):len(entries)], p.anyUser...)
	}
	for _, e := range entries {
		if !hostMatches(e.GetHost(), addr) || !resourceMatches(e, r) {
			continue
		}
		if e.GetPermission() == pb.AclPermission_ACL_PERMISSION_DENY {
			if denies(e.GetOperation(), op) {
				return Decision{Why: "denied by " + Describe(e)}
			}
			continue
		}
		if allowedBy == nil && allows(e.GetOperation(), op) {
			allowedBy = e
		}
	}
	if allowedBy != nil {
		return Decision{Allowed: true, Why: "allowed by " + Describe(allowedBy)}
	}
	return Decision{Why: "no ACL allows it"}
}

// allows reports whether an allow entry of operation has covers op: the
// same operation, all, or describe implied by an operation on the resource.
func allows(has, op pb.AclOperation) bool {
	switch {
	case has == op, has == pb.AclOperation_ACL_OPERATION_ALL:
		return true
	case op == pb.AclOperation_ACL_OPERATION_DESCRIBE:
		switch has {
		case pb.AclOperation_ACL_OPERATION_READ, pb.AclOperation_ACL_OPERATION_WRITE, pb.AclOperation_ACL_OPERATION_CREATE,
			pb.AclOperation_ACL_OPERATION_DROP, pb.AclOperation_ACL_OPERATION_ALTER:
			return true
		}
	}
	return false
}

// denies reports whether a deny entry of operation has covers op: the same
// operation, or all. Denying read does not deny describe.
func denies(has, op pb.AclOperation) bool {
	return has == op || has == pb.AclOperation_ACL_OPERATION_ALL
}

func hostMatches(host string, addr netip.Addr) bool {
	if host == "*" {
		return true
	}
	want, err := netip.ParseAddr(host)
	return err == nil && addr.IsValid() && want.Unmap() == addr.Unmap()
}

// resourceMatches reports whether e's resource covers r: the cluster covers
// everything, a database its tables, a name literally or by prefix.
func resourceMatches(e *pb.AclEntry, r Resource) bool {
	name, prefix := e.GetResourceName(), e.GetPattern() == pb.AclPatternType_ACL_PATTERN_PREFIX
	match := func(s string) bool {
		if prefix {
			return strings.HasPrefix(s, name)
		}
		return s == name
	}
	switch e.GetResourceType() {
	case pb.AclResourceType_ACL_RESOURCE_CLUSTER:
		return true
	case pb.AclResourceType_ACL_RESOURCE_DATABASE:
		return r.Type != pb.AclResourceType_ACL_RESOURCE_CLUSTER && match(r.Database)
	case pb.AclResourceType_ACL_RESOURCE_TABLE:
		return r.Type == pb.AclResourceType_ACL_RESOURCE_TABLE && match(r.Database+"."+r.Table)
	}
	return false
}

// Describe writes an entry as floe acl list shows it.
func Describe(e *pb.AclEntry) string {
	perm := "allow"
	if e.GetPermission() == pb.AclPermission_ACL_PERMISSION_DENY {
		perm = "deny"
	}
	res := "cluster"
	switch e.GetResourceType() {
	case pb.AclResourceType_ACL_RESOURCE_DATABASE:
		res = "database " + e.GetResourceName()
	case pb.AclResourceType_ACL_RESOURCE_TABLE:
		res = "table " + e.GetResourceName()
	}
	if e.GetPattern() == pb.AclPatternType_ACL_PATTERN_PREFIX {
		res += "*"
	}
	return fmt.Sprintf("%s %s %s %s from %s", perm, e.GetPrincipal(), OperationName(e.GetOperation()), res, e.GetHost())
}
