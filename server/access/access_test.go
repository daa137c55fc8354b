package access

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"storj.io/drpc"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
)

// TestEveryRPCHasARule: every RPC a node serves is in the rules table, and
// the table names no RPC that does not exist.
func TestEveryRPCHasARule(t *testing.T) {
	var served []string
	for _, desc := range []drpc.Description{pb.DRPCMetaDescription{}, pb.DRPCTabletDescription{}} {
		for i := range desc.NumMethods() {
			rpc, _, _, _, _ := desc.Method(i)
			served = append(served, rpc)
			if _, ok := rules[rpc]; !ok {
				t.Errorf("%s has no access rule", rpc)
			}
		}
	}
	for rpc := range rules {
		if !slices.Contains(served, rpc) {
			t.Errorf("the rule of %s names no RPC a node serves", rpc)
		}
	}
}

type catalog map[uint64][2]string

func (c catalog) TableName(id uint64) (string, string, bool) {
	n, ok := c[id]
	return n[0], n[1], ok
}

var (
	alice  = transport.Caller{Principal: identity.UserPrincipal("alice"), Addr: netip.MustParseAddr("10.0.0.1")}
	node2  = transport.Caller{Principal: identity.NodePrincipal(2), Addr: netip.MustParseAddr("10.0.0.2")}
	tables = catalog{1: {"sales", "orders"}, 2: {"sales", "refunds"}, 3: {"hr", "people"}}
)

// authorize runs both checks of a call, as the handler chain does.
func authorize(a *Authorizer, c transport.Caller, rpc string, req drpc.Message) error {
	if err := a.AuthorizeCall(c, rpc); err != nil {
		return err
	}
	return a.AuthorizeRequest(context.Background(), c, rpc, req)
}

func TestNodesOnlyCalls(t *testing.T) {
	for _, on := range []bool{false, true} {
		a := New(Config{On: on, SuperUsers: []identity.Principal{identity.UserPrincipal("alice")}, Catalog: tables})
		for rpc, r := range rules {
			if !r.nodesOnly {
				continue
			}
			// Even a super-user is not a node.
			if err := a.AuthorizeCall(alice, rpc); !errors.Is(err, transport.ErrNotAuthorized) || !strings.Contains(err.Error(), "nodes of the cluster only") {
				t.Errorf("authorization %v: %s by user:alice: %v, want refused as for nodes only", on, rpc, err)
			}
			if err := a.AuthorizeCall(node2, rpc); err != nil {
				t.Errorf("%s by node:2: %v", rpc, err)
			}
		}
		follower := &pb.FetchRequest{ReplicaId: 9, Buckets: []*pb.FetchBucket{{TableId: 1}}}
		if err := authorize(a, alice, "/floe.v1.Tablet/Fetch", follower); !errors.Is(err, transport.ErrNotAuthorized) {
			t.Errorf("a follower's fetch by user:alice: %v, want refused", err)
		}
		if err := authorize(a, node2, "/floe.v1.Tablet/Fetch", follower); err != nil {
			t.Errorf("a follower's fetch by node:2: %v", err)
		}
	}
}

// TestACLMatrix: each operation, allowed and denied, by a literal and a
// prefix entry, on the call that needs it.
func TestACLMatrix(t *testing.T) {
	type call struct {
		rpc string
		req drpc.Message
	}
	// A call per operation on table sales.orders (or its database, or the
	// cluster), and the entry resource that covers it.
	cases := []struct {
		op       pb.AclOperation
		call     call
		resource pb.AclResourceType
		literal  string
		prefix   string
	}{
		{opRead, call{"/floe.v1.Tablet/Lookup", &pb.LookupRequest{TableId: 1}}, pb.AclResourceType_ACL_RESOURCE_TABLE, "sales.orders", "sales.ord"},
		{opRead, call{"/floe.v1.Tablet/Fetch", &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: 1}}}}, pb.AclResourceType_ACL_RESOURCE_TABLE, "sales.orders", "sales."},
		{opWrite, call{"/floe.v1.Tablet/Produce", &pb.ProduceRequest{TableId: 1}}, pb.AclResourceType_ACL_RESOURCE_TABLE, "sales.orders", "sales.o"},
		{opWrite, call{"/floe.v1.Tablet/Writes", &pb.WriteCall{Call: &pb.WriteCall_PutKv{PutKv: &pb.PutKvRequest{TableId: 1}}}}, pb.AclResourceType_ACL_RESOURCE_DATABASE, "sales", "sal"},
		{opCreate, call{"/floe.v1.Meta/CreateTable", &pb.CreateTableRequest{Database: "sales", Name: "orders"}}, pb.AclResourceType_ACL_RESOURCE_TABLE, "sales.orders", "sales.or"},
		{opCreate, call{"/floe.v1.Meta/CreateDatabase", &pb.CreateDatabaseRequest{Name: "sales"}}, pb.AclResourceType_ACL_RESOURCE_DATABASE, "sales", "s"},
		{opDrop, call{"/floe.v1.Meta/DropTable", &pb.DropTableRequest{Database: "sales", Name: "orders"}}, pb.AclResourceType_ACL_RESOURCE_TABLE, "sales.orders", "sales.orders"},
		{opDrop, call{"/floe.v1.Meta/DropDatabase", &pb.DropDatabaseRequest{Name: "sales"}}, pb.AclResourceType_ACL_RESOURCE_DATABASE, "sales", "sa"},
		{opDescribe, call{"/floe.v1.Meta/GetTable", &pb.GetTableRequest{Database: "sales", Name: "orders"}}, pb.AclResourceType_ACL_RESOURCE_TABLE, "sales.orders", "sales"},
		{opDescribe, call{"/floe.v1.Meta/ClusterStatus", &pb.ClusterStatusRequest{}}, pb.AclResourceType_ACL_RESOURCE_CLUSTER, "", ""},
		{opAdmin, call{"/floe.v1.Meta/DrainNode", &pb.DrainNodeRequest{NodeId: 2}}, pb.AclResourceType_ACL_RESOURCE_CLUSTER, "", ""},
		{opAdmin, call{"/floe.v1.Meta/AddAcls", &pb.AddAclsRequest{}}, pb.AclResourceType_ACL_RESOURCE_CLUSTER, "", ""},
		{pb.AclOperation_ACL_OPERATION_ALTER, call{"/floe.v1.Meta/PutUser", &pb.PutUserRequest{User: &pb.UserRecord{Name: "alice"}, Alter: true}}, pb.AclResourceType_ACL_RESOURCE_CLUSTER, "", ""},
	}
	entry := func(rt pb.AclResourceType, name string, prefix bool, op pb.AclOperation, perm pb.AclPermission) *pb.AclEntry {
		e := &pb.AclEntry{Principal: "user:alice", Host: "*", ResourceType: rt, ResourceName: name,
			Pattern: pb.AclPatternType_ACL_PATTERN_LITERAL, Operation: op, Permission: perm}
		if prefix {
			e.Pattern = pb.AclPatternType_ACL_PATTERN_PREFIX
		}
		return e
	}
	allow, deny := pb.AclPermission_ACL_PERMISSION_ALLOW, pb.AclPermission_ACL_PERMISSION_DENY
	for _, tc := range cases {
		for _, prefix := range []bool{false, true} {
			name := tc.literal
			if prefix {
				name = tc.prefix
			}
			if prefix && tc.resource == pb.AclResourceType_ACL_RESOURCE_CLUSTER {
				continue // the cluster has no name to match by prefix
			}
			label := OperationName(tc.op) + " " + tc.call.rpc
			if prefix {
				label += " prefix " + name
			}
			t.Run(label, func(t *testing.T) {
				a := New(Config{On: true, Catalog: tables})
				if tc.op == pb.AclOperation_ACL_OPERATION_ALTER {
					// Alice may change her own password with no ACL at all.
					if err := authorize(a, alice, tc.call.rpc, tc.call.req); err != nil {
						t.Fatalf("own password: %v", err)
					}
					return
				}
				if err := authorize(a, alice, tc.call.rpc, tc.call.req); !errors.Is(err, transport.ErrNotAuthorized) ||
					!strings.Contains(err.Error(), "no ACL allows it") {
					t.Fatalf("no ACL: %v, want refused", err)
				}
				a.SetACLs([]*pb.AclEntry{entry(tc.resource, name, prefix, tc.op, allow)})
				if err := authorize(a, alice, tc.call.rpc, tc.call.req); err != nil {
					t.Fatalf("allowed by an entry: %v", err)
				}
				// Another operation on the same resource does not allow it
				// (describe aside, which the others imply).
				other := opRead
				if tc.op == opRead {
					other = opWrite
				}
				if tc.op != opDescribe {
					a.SetACLs([]*pb.AclEntry{entry(tc.resource, name, prefix, other, allow)})
					if err := authorize(a, alice, tc.call.rpc, tc.call.req); err == nil {
						t.Fatalf("allowed by an entry for %s", OperationName(other))
					}
				}
				// Deny wins over allow, even an allow of everything.
				a.SetACLs([]*pb.AclEntry{
					entry(pb.AclResourceType_ACL_RESOURCE_CLUSTER, "", false, pb.AclOperation_ACL_OPERATION_ALL, allow),
					entry(tc.resource, name, prefix, tc.op, deny),
				})
				if err := authorize(a, alice, tc.call.rpc, tc.call.req); !errors.Is(err, transport.ErrNotAuthorized) ||
					!strings.Contains(err.Error(), "denied by deny user:alice") {
					t.Fatalf("denied by an entry: %v", err)
				}
			})
		}
	}
}

func TestPolicyDetails(t *testing.T) {
	allowRead := func(principal, host, table string) *pb.AclEntry {
		return &pb.AclEntry{Principal: principal, Host: host, ResourceType: pb.AclResourceType_ACL_RESOURCE_TABLE,
			ResourceName: table, Pattern: pb.AclPatternType_ACL_PATTERN_LITERAL,
			Operation: opRead, Permission: pb.AclPermission_ACL_PERMISSION_ALLOW}
	}
	orders := Table("sales", "orders")
	p := NewPolicy(true, []identity.Principal{identity.UserPrincipal("root")}, []*pb.AclEntry{
		allowRead("user:*", "*", "sales.orders"),
		allowRead("user:bob", "10.0.0.9", "hr.people"),
	})
	bob, carol := identity.UserPrincipal("bob"), identity.UserPrincipal("carol")
	for _, tc := range []struct {
		who  identity.Principal
		addr string
		op   pb.AclOperation
		r    Resource
		want bool
	}{
		{carol, "10.0.0.1", opRead, orders, true},                            // user:*
		{carol, "10.0.0.1", opDescribe, orders, true},                        // implied by read
		{carol, "10.0.0.1", opWrite, orders, false},                          // another operation
		{carol, "10.0.0.1", opRead, Table("sales", "orders2"), false},        // literal is exact
		{bob, "10.0.0.9", opRead, Table("hr", "people"), true},               // from its host
		{bob, "10.0.0.8", opRead, Table("hr", "people"), false},              // not from another
		{identity.UserPrincipal("root"), "10.0.0.1", opAdmin, Cluster, true}, // super-user
		{identity.Principal{}, "10.0.0.1", opRead, orders, false},            // anonymous
		{identity.NodePrincipal(3), "10.0.0.1", opAdmin, Cluster, true},      // a node
	} {
		d := p.Check(tc.who, netip.MustParseAddr(tc.addr), tc.op, tc.r)
		if d.Allowed != tc.want {
			t.Errorf("%s from %s %s %s: allowed %v (%s), want %v", tc.who, tc.addr, OperationName(tc.op), tc.r, d.Allowed, d.Why, tc.want)
		}
	}
	if d := NewPolicy(false, nil, nil).Check(carol, netip.Addr{}, opAdmin, Cluster); !d.Allowed {
		t.Errorf("authorization off: %s", d.Why)
	}
}

func TestUnknownTableIsNotLetThrough(t *testing.T) {
	a := New(Config{On: false, Catalog: tables})
	err := authorize(a, alice, "/floe.v1.Tablet/Produce", &pb.ProduceRequest{TableId: 99})
	if !errors.Is(err, transport.ErrNotLeader) {
		t.Fatalf("a table the node does not know: %v, want NOT_LEADER (retriable)", err)
	}
}

// TestSecurityDocListsEveryRule: docs/security.md has a row per RPC saying
// what the rule needs, as the rules table does.
func TestSecurityDocListsEveryRule(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for rpc, need := range RuleDocs() {
		if need == "" {
			t.Errorf("the rule of %s has no doc", rpc)
			continue
		}
		if row := "| `" + rpc + "` | " + need + " |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/security.md lacks the row %q", row)
		}
	}
}
