package access

import (
	"storj.io/drpc"

	"github.com/floedb/floe/transport/pb"
)

// A rule is what one RPC needs: nodes only, or an operation on the
// resources its request names. check runs with each request message,
// decoded; nodesOnly is checked before the request is read.
type rule struct {
	nodesOnly bool
	check     func(a *Authorizer, c caller, req drpc.Message) error
	// doc says what the rule needs, as docs/security.md lists it.
	doc string
}

// Operations, shortened.
const (
	opRead     = pb.AclOperation_ACL_OPERATION_READ
	opWrite    = pb.AclOperation_ACL_OPERATION_WRITE
	opCreate   = pb.AclOperation_ACL_OPERATION_CREATE
	opDrop     = pb.AclOperation_ACL_OPERATION_DROP
	opDescribe = pb.AclOperation_ACL_OPERATION_DESCRIBE
	opAdmin    = pb.AclOperation_ACL_OPERATION_CLUSTER_ADMIN
)

// nodes is the rule of the RPCs only nodes make.
var nodes = rule{nodesOnly: true, doc: "nodes only"}

// anyone is the rule of the RPCs every authenticated caller may make: they
// reveal or grant nothing by themselves (a writer id is bound to whoever
// allocated it; the Raft status names the metadata voters).
var anyone = rule{check: func(*Authorizer, caller, drpc.Message) error { return nil }, doc: "any authenticated caller"}

// on returns the rule of an operation on the cluster.
func on(op pb.AclOperation) rule {
	return rule{check: func(a *Authorizer, c caller, _ drpc.Message) error { return a.need(c, op, Cluster) },
		doc: OperationName(op) + " on the cluster"}
}

// onRequest returns the rule of an operation on the resource a request of
// type M names.
func onRequest[M drpc.Message](op pb.AclOperation, what string, resource func(m M) Resource) rule {
	return rule{doc: OperationName(op) + " on " + what, check: func(a *Authorizer, c caller, req drpc.Message) error {
		m, ok := req.(M)
		if !ok {
			return a.refuse(c, "an unexpected request type %T", req)
		}
		return a.need(c, op, resource(m))
	}}
}

// onTable returns the rule of an operation on the table a tablet request of
// type M names by id.
func onTable[M interface {
	drpc.Message
	GetTableId() uint64
}](op pb.AclOperation) rule {
	return rule{doc: OperationName(op) + " on the table", check: func(a *Authorizer, c caller, req drpc.Message) error {
		m, ok := req.(M)
		if !ok {
			return a.refuse(c, "an unexpected request type %T", req)
		}
		return a.needTable(c, op, m.GetTableId())
	}}
}

// Rules maps every RPC a node serves to what it needs. Auth.Authenticate is
// the transport's own, served before anybody is known, and is not here. A
// call whose RPC is missing is refused: a new RPC must be given a rule
// (TestEveryRPCHasARule).
var rules = map[string]rule{
	// Cluster formation, membership and metadata between nodes.
	"/floe.v1.Meta/Hello":            nodes,
	"/floe.v1.Meta/Join":             nodes,
	"/floe.v1.Meta/Propose":          nodes,
	"/floe.v1.Meta/WatchMetadata":    nodes,
	"/floe.v1.Meta/AdjustIsr":        nodes,
	"/floe.v1.Meta/CommitRemoteLog":  nodes,
	"/floe.v1.Meta/CommitLake":       nodes,
	"/floe.v1.Meta/CommitKVSnapshot": nodes,
	"/floe.v1.Tablet/ReplicaLogs":    nodes,
	"/floe.v1.Meta/RaftStatus":       anyone,
	"/floe.v1.Meta/AllocateWriterId": anyone,

	// Catalog.
	"/floe.v1.Meta/CreateDatabase": onRequest(opCreate, "the database", func(m *pb.CreateDatabaseRequest) Resource { return Database(m.GetName()) }),
	"/floe.v1.Meta/DropDatabase":   onRequest(opDrop, "the database", func(m *pb.DropDatabaseRequest) Resource { return Database(m.GetName()) }),
	"/floe.v1.Meta/ListDatabases":  on(opDescribe),
	"/floe.v1.Meta/CreateTable": onRequest(opCreate, "the table", func(m *pb.CreateTableRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/DropTable": onRequest(opDrop, "the table", func(m *pb.DropTableRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/AlterTable": onRequest(pb.AclOperation_ACL_OPERATION_ALTER, "the table", func(m *pb.AlterTableRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/ListTables": onRequest(opDescribe, "the database", func(m *pb.ListTablesRequest) Resource { return Database(m.GetDatabase()) }),
	"/floe.v1.Meta/GetTable": onRequest(opDescribe, "the table", func(m *pb.GetTableRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/CreatePartition": onRequest(pb.AclOperation_ACL_OPERATION_ALTER, "the table", func(m *pb.CreatePartitionRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/CreatePartitionOnWrite": onRequest(opWrite, "the table", func(m *pb.CreatePartitionRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/DropPartition": onRequest(opDrop, "the table", func(m *pb.DropPartitionRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),
	"/floe.v1.Meta/ListPartitions": onRequest(opDescribe, "the table", func(m *pb.ListPartitionsRequest) Resource {
		return Table(m.GetDatabase(), m.GetName())
	}),

	// Operations on the cluster.
	"/floe.v1.Meta/ClusterStatus":      on(opDescribe),
	"/floe.v1.Meta/BucketStatus":       on(opDescribe),
	"/floe.v1.Meta/ElectLeaders":       on(opAdmin),
	"/floe.v1.Meta/DrainNode":          on(opAdmin),
	"/floe.v1.Meta/RemoveNode":         on(opAdmin),
	"/floe.v1.Meta/MoveReplicas":       on(opAdmin),
	"/floe.v1.Meta/CancelMoves":        on(opAdmin),
	"/floe.v1.Meta/MoveStatus":         on(opDescribe),
	"/floe.v1.Meta/Rebalance":          on(opAdmin),
	"/floe.v1.Meta/SetClusterSettings": on(opAdmin),
	"/floe.v1.Meta/AddVoter":           on(opAdmin),
	"/floe.v1.Meta/RemoveVoter":        on(opAdmin),
	"/floe.v1.Meta/TransferLeadership": on(opAdmin),

	// Security.
	"/floe.v1.Meta/PutUser":    {check: putUser, doc: "cluster-admin on the cluster; a user may change its own password"},
	"/floe.v1.Meta/DeleteUser": on(opAdmin),
	"/floe.v1.Meta/ListUsers":  on(opDescribe),
	"/floe.v1.Meta/AddAcls":    on(opAdmin),
	"/floe.v1.Meta/RemoveAcls": on(opAdmin),
	"/floe.v1.Meta/ListAcls":   on(opDescribe),

	// Data.
	"/floe.v1.Tablet/Produce":      {check: produce, doc: writeDoc},
	"/floe.v1.Tablet/PutKv":        {check: putKV, doc: writeDoc},
	"/floe.v1.Tablet/Writes":       {check: writeCall, doc: "each call: " + writeDoc},
	"/floe.v1.Tablet/Fetch":        {check: fetch, doc: fetchDoc},
	"/floe.v1.Tablet/Fetches":      {check: fetch, doc: "each fetch: " + fetchDoc},
	"/floe.v1.Tablet/ListOffsets":  onTable[*pb.ListOffsetsRequest](opRead),
	"/floe.v1.Tablet/Lookup":       onTable[*pb.LookupRequest](opRead),
	"/floe.v1.Tablet/PrefixLookup": onTable[*pb.PrefixLookupRequest](opRead),
	"/floe.v1.Tablet/SnapshotKV":   onTable[*pb.SnapshotKVRequest](pb.AclOperation_ACL_OPERATION_ALTER),
	"/floe.v1.Tablet/ScanRows":     onTable[*pb.ScanRowsRequest](opRead),
}

// Docs of the data rules.
const (
	writeDoc = "write on the table, with a writer id of the caller's own"
	fetchDoc = "read on every table it names; a follower's fetch (replica id set): nodes only"
)

// putUser: changing users is cluster administration, but a user may change
// its own password (alter only: it cannot create itself).
func putUser(a *Authorizer, c caller, req drpc.Message) error {
	m, ok := req.(*pb.PutUserRequest)
	if !ok {
		return a.refuse(c, "an unexpected request type %T", req)
	}
	if m.GetAlter() && !m.GetCreate() && c.Principal.Name != "" && m.GetUser().GetName() == c.Principal.Name {
		return nil
	}
	return a.need(c, opAdmin, Cluster)
}

// produce writes its table, with a writer id of the caller's own.
func produce(a *Authorizer, c caller, req drpc.Message) error {
	m, ok := req.(*pb.ProduceRequest)
	if !ok {
		return a.refuse(c, "an unexpected request type %T", req)
	}
	if err := a.needTable(c, opWrite, m.GetTableId()); err != nil {
		return err
	}
	return a.checkWriter(c, m.GetBatch(), m.GetWriterToken())
}

// putKV writes its table, with a writer id of the caller's own.
func putKV(a *Authorizer, c caller, req drpc.Message) error {
	m, ok := req.(*pb.PutKvRequest)
	if !ok {
		return a.refuse(c, "an unexpected request type %T", req)
	}
	if err := a.needTable(c, opWrite, m.GetTableId()); err != nil {
		return err
	}
	return a.checkWriter(c, m.GetBatch(), m.GetWriterToken())
}

// writeCall: each call of a write stream is a produce or a put.
func writeCall(a *Authorizer, c caller, req drpc.Message) error {
	m, ok := req.(*pb.WriteCall)
	if !ok {
		return a.refuse(c, "an unexpected request type %T", req)
	}
	switch call := m.GetCall().(type) {
	case *pb.WriteCall_Produce:
		return produce(a, c, call.Produce)
	case *pb.WriteCall_PutKv:
		return putKV(a, c, call.PutKv)
	}
	return nil // an empty call: the handler refuses it
}

// fetch: a follower's fetch (replica_id set) is for nodes only; a
// consumer's reads every table it names.
func fetch(a *Authorizer, c caller, req drpc.Message) error {
	m, ok := req.(*pb.FetchRequest)
	if !ok {
		return a.refuse(c, "an unexpected request type %T", req)
	}
	if m.GetReplicaId() != 0 && !c.Principal.IsNode() {
		return a.nodesOnly(c, "a follower's fetch")
	}
	var last uint64
	for i, b := range m.GetBuckets() {
		if id := b.GetTableId(); i == 0 || id != last {
			if err := a.needTable(c, opRead, id); err != nil {
				return err
			}
			last = id
		}
	}
	return nil
}
