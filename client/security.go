package client

import (
	"context"
	"strings"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// User is a user who signs in with a password.
type User struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	ChangedAt time.Time `json:"changed_at"`
}

// CreateUser creates a user who signs in with password. The password is
// salted and hashed here (SCRAM-SHA-256): it never reaches the cluster.
func (a *Admin) CreateUser(ctx context.Context, name, password string) error {
	return a.putUser(ctx, name, password, true)
}

// SetPassword changes a user's password. A user may change its own;
// changing another's is cluster administration.
func (a *Admin) SetPassword(ctx context.Context, name, password string) error {
	return a.putUser(ctx, name, password, false)
}

func (a *Admin) putUser(ctx context.Context, name, password string, create bool) error {
	if password == "" {
		return pkgerr.New("client", "an empty password")
	}
	rec, err := transport.ScramCredentials(name, password)
	if err != nil {
		return pkgerr.Errorf("client", "%w", err)
	}
	req := &pb.PutUserRequest{RequestId: newRequestID(), User: rec, Create: create, Alter: !create}
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.PutUser(ctx, req)
		return err
	})
}

// DeleteUser deletes a user. Its ACL entries stay.
func (a *Admin) DeleteUser(ctx context.Context, name string) error {
	req := &pb.DeleteUserRequest{RequestId: newRequestID(), Name: name}
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.DeleteUser(ctx, req)
		return err
	})
}

// ListUsers lists the users by name.
func (a *Admin) ListUsers(ctx context.Context) ([]User, error) {
	var resp *pb.ListUsersResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ListUsers(ctx, &pb.ListUsersRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]User, len(resp.GetUsers()))
	for i, u := range resp.GetUsers() {
		out[i] = User{Name: u.GetName(), CreatedAt: time.UnixMilli(u.GetCreatedAtMs()), ChangedAt: time.UnixMilli(u.GetChangedAtMs())}
	}
	return out, nil
}

// ACL is an access-control entry: it allows (or, with Deny, denies)
// Principal the Operation on a resource, from Host.
type ACL struct {
	// Principal is "user:NAME", "node:ID", or "user:*" for every user.
	Principal string `json:"principal"`
	// Host is the caller's IP address, or "*" (the default) for any.
	Host string `json:"host"`
	// Resource is "cluster", "database" or "table".
	Resource string `json:"resource"`
	// Name is the database or "database.table"; empty for the cluster.
	Name string `json:"name,omitempty"`
	// Prefix matches every resource whose name starts with Name.
	Prefix bool `json:"prefix,omitempty"`
	// Operation is read, write, create, drop, alter, describe,
	// cluster-admin or all.
	Operation string `json:"operation"`
	// Deny denies instead of allowing; deny wins over allow.
	Deny bool `json:"deny,omitempty"`
}

// Operations are the ACL operations, in order.
var Operations = []string{"read", "write", "create", "drop", "alter", "describe", "cluster-admin", "all"}

// ErrInvalidACL is returned for an ACL that cannot be one: an unknown
// resource or operation.
var ErrInvalidACL = pkgerr.New("client", "invalid ACL")

func (e ACL) wire() (*pb.AclEntry, error) {
	w := &pb.AclEntry{Principal: e.Principal, Host: e.Host, ResourceName: e.Name,
		Pattern: pb.AclPatternType_ACL_PATTERN_LITERAL, Permission: pb.AclPermission_ACL_PERMISSION_ALLOW}
	if w.Host == "" {
		w.Host = "*"
	}
	if e.Prefix {
		w.Pattern = pb.AclPatternType_ACL_PATTERN_PREFIX
	}
	if e.Deny {
		w.Permission = pb.AclPermission_ACL_PERMISSION_DENY
	}
	switch e.Resource {
	case "cluster":
		w.ResourceType = pb.AclResourceType_ACL_RESOURCE_CLUSTER
	case "database":
		w.ResourceType = pb.AclResourceType_ACL_RESOURCE_DATABASE
	case "table":
		w.ResourceType = pb.AclResourceType_ACL_RESOURCE_TABLE
	default:
		return nil, pkgerr.Errorf("client", "%w: resource %q: want cluster, database or table", ErrInvalidACL, e.Resource)
	}
	op, ok := pb.AclOperation_value["ACL_OPERATION_"+strings.ToUpper(strings.ReplaceAll(e.Operation, "-", "_"))]
	if !ok || op == 0 {
		return nil, pkgerr.Errorf("client", "%w: operation %q: want one of %s", ErrInvalidACL, e.Operation, strings.Join(Operations, ", "))
	}
	w.Operation = pb.AclOperation(op)
	return w, nil
}

func aclOf(w *pb.AclEntry) ACL {
	e := ACL{Principal: w.GetPrincipal(), Host: w.GetHost(), Name: w.GetResourceName(),
		Prefix:    w.GetPattern() == pb.AclPatternType_ACL_PATTERN_PREFIX,
		Deny:      w.GetPermission() == pb.AclPermission_ACL_PERMISSION_DENY,
		Resource:  strings.ToLower(strings.TrimPrefix(w.GetResourceType().String(), "ACL_RESOURCE_")),
		Operation: strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(w.GetOperation().String(), "ACL_OPERATION_")), "_", "-")}
	return e
}

func wireACLs(acls []ACL) ([]*pb.AclEntry, error) {
	out := make([]*pb.AclEntry, len(acls))
	for i, e := range acls {
		w, err := e.wire()
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

// AddACLs adds entries and returns how many were new. A change reaches
// every node within its metadata's apply or watch latency (normally
// milliseconds): calls from then on are decided by it.
func (a *Admin) AddACLs(ctx context.Context, acls ...ACL) (int, error) {
	entries, err := wireACLs(acls)
	if err != nil {
		return 0, err
	}
	req := &pb.AddAclsRequest{RequestId: newRequestID(), Entries: entries}
	var resp *pb.CommandResponse
	err = a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		resp, err = m.AddAcls(ctx, req)
		return err
	})
	return int(resp.GetResult().GetAclsChanged()), err
}

// RemoveACLs removes the entries equal to those given and returns how many
// there were.
func (a *Admin) RemoveACLs(ctx context.Context, acls ...ACL) (int, error) {
	entries, err := wireACLs(acls)
	if err != nil {
		return 0, err
	}
	req := &pb.RemoveAclsRequest{RequestId: newRequestID(), Entries: entries}
	var resp *pb.CommandResponse
	err = a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		resp, err = m.RemoveAcls(ctx, req)
		return err
	})
	return int(resp.GetResult().GetAclsChanged()), err
}

// ListACLs lists every ACL entry.
func (a *Admin) ListACLs(ctx context.Context) ([]ACL, error) {
	var resp *pb.ListAclsResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ListAcls(ctx, &pb.ListAclsRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]ACL, len(resp.GetEntries()))
	for i, w := range resp.GetEntries() {
		out[i] = aclOf(w)
	}
	return out, nil
}
