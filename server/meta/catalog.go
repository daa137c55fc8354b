package meta

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// The catalog handlers: writes become commands proposed through the leader;
// reads are served by the leader once it has confirmed it leads and applied
// everything committed, and carry the applied index they reflect.

func (m *metaService) CreateDatabase(ctx context.Context, req *pb.CreateDatabaseRequest) (*pb.CommandResponse, error) {
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_CreateDatabase{
		CreateDatabase: &pb.CreateDatabase{Name: req.Name, IfNotExists: req.IfNotExists}}})
}

func (m *metaService) DropDatabase(ctx context.Context, req *pb.DropDatabaseRequest) (*pb.CommandResponse, error) {
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_DropDatabase{
		DropDatabase: &pb.DropDatabase{Name: req.Name, Cascade: req.Cascade, IfExists: req.IfExists}}})
}

func (m *metaService) CreateTable(ctx context.Context, req *pb.CreateTableRequest) (*pb.CommandResponse, error) {
	cmd, err := CreateTableCommand(req, m.r.liveTabletNodes())
	if err != nil {
		return nil, err
	}
	resp, err := m.command(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if n := m.r.node.Load(); n != nil && resp.GetResult().GetTable() != nil {
		if expected, err := expectedTabletNodes(ctx, n); err == nil {
			if w := replicationWarning(req, resp.GetResult(), expected); w != "" {
				resp.Warnings = append(resp.Warnings, w)
			}
		}
	}
	return resp, nil
}

// replicationWarning warns of a table created with fewer replicas than it
// asked for although the cluster has, or is about to have, expected tablet
// nodes: one that asks for none gets the default replication, or as many
// replicas as there are tablet nodes registered and live, if fewer. That
// is the case of a table created before every node of a new cluster has
// registered (which readiness waits for), or while nodes are down. A
// cluster of fewer nodes than the default (floe dev) gets no warning.
func replicationWarning(req *pb.CreateTableRequest, res *pb.CommandResult, expected int) string {
	t := res.GetTable()
	if t == nil || res.GetUnchanged() {
		return ""
	}
	asked := req.GetReplication()
	if asked == 0 {
		asked = int32(min(metastate.DefaultReplication, expected))
	}
	if t.GetReplication() >= asked {
		return ""
	}
	return fmt.Sprintf("table %s.%s has replication %d, not %d: only %d of the cluster's %d tablet nodes were registered and live "+
		"(`floe cluster status --wait` waits until every node of a new cluster has registered)",
		t.GetDatabase(), t.GetName(), t.GetReplication(), asked, t.GetReplication(), expected)
}

// CreateTableCommand is the command a CreateTable request proposes, its
// schema parsed and checked; liveNodes are the tablet nodes to place it on
// (nil: every registered one).
func CreateTableCommand(req *pb.CreateTableRequest, liveNodes []uint32) (*pb.Command, error) {
	columns, pk, err := tableColumns(req.Schema, req.PrimaryKey)
	if err != nil {
		return nil, err
	}
	return &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_CreateTable{
		CreateTable: &pb.CreateTable{
			Database: req.Database, Name: req.Name, Columns: columns, PrimaryKey: pk,
			BucketKey: req.BucketKey, Buckets: req.Buckets, Replication: req.Replication,
			Properties: req.Properties, IfNotExists: req.IfNotExists, LiveNodes: liveNodes,
			Checks: metastate.CreateTableChecks, PartitionKeys: req.PartitionKeys,
		}}}, nil
}

// tableColumns parses and checks a schema in the CLI syntax, with the
// primary key given either inside it or separately (not both).
func tableColumns(schema string, primaryKey []string) ([]*pb.Column, []string, error) {
	if strings.TrimSpace(schema) == "" {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "a table needs a schema, like 'id BIGINT NOT NULL, name STRING'")
	}
	sch, err := record.ParseSchema(schema)
	if err != nil {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%v", err)
	}
	if len(primaryKey) > 0 {
		if len(sch.PrimaryKey) > 0 && !slices.Equal(sch.PrimaryKey, primaryKey) {
			return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
				"primary key given twice: (%s) in the schema and (%s) as an option",
				strings.Join(sch.PrimaryKey, ", "), strings.Join(primaryKey, ", "))
		}
		sch.PrimaryKey = primaryKey
		if err := sch.Validate(); err != nil {
			return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%v", err)
		}
	}
	columns := make([]*pb.Column, len(sch.Columns))
	for i, c := range sch.Columns {
		columns[i] = &pb.Column{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable}
	}
	return columns, sch.PrimaryKey, nil
}

func (m *metaService) DropTable(ctx context.Context, req *pb.DropTableRequest) (*pb.CommandResponse, error) {
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_DropTable{
		DropTable: &pb.DropTable{Database: req.Database, Name: req.Name, IfExists: req.IfExists}}})
}

func (m *metaService) command(ctx context.Context, cmd *pb.Command) (*pb.CommandResponse, error) {
	res, err := m.r.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return &pb.CommandResponse{Result: res}, nil
}

func (m *metaService) ListDatabases(ctx context.Context, req *pb.ListDatabasesRequest) (*pb.ListDatabasesResponse, error) {
	var resp *pb.ListDatabasesResponse
	err := m.r.read(ctx, req.Local, func(applied uint64) error {
		resp = &pb.ListDatabasesResponse{Databases: m.r.node.Load().State().Databases(), AppliedIndex: applied}
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ListDatabases(ctx, req)
		return err
	})
	return resp, err
}

func (m *metaService) ListTables(ctx context.Context, req *pb.ListTablesRequest) (*pb.ListTablesResponse, error) {
	var resp *pb.ListTablesResponse
	err := m.r.read(ctx, req.Local, func(applied uint64) error {
		tables, err := m.r.node.Load().State().Tables(req.Database)
		resp = &pb.ListTablesResponse{Tables: tables, AppliedIndex: applied}
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ListTables(ctx, req)
		return err
	})
	return resp, err
}

func (m *metaService) GetTable(ctx context.Context, req *pb.GetTableRequest) (*pb.GetTableResponse, error) {
	var resp *pb.GetTableResponse
	err := m.r.read(ctx, false, func(applied uint64) error {
		return m.r.node.Load().State().Read(func(v *metastate.View) (err error) {
			resp, err = m.getTable(v, req, applied)
			return err
		})
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.GetTable(ctx, req)
		return err
	})
	return resp, err
}

// read runs read on the leader after a linearizable read check, or
// forwards the request to the leader; with local, it reads this node's own
// (possibly stale) state. Either way read learns the applied index it
// reflects.
func (r *Role) read(ctx context.Context, local bool, read func(applied uint64) error,
	remote func(context.Context, pb.DRPCMetaClient) error) error {
	if local {
		n := r.node.Load()
		if n == nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is not part of a cluster yet", r.cfg.NodeID)
		}
		return read(n.State().AppliedIndex())
	}
	return r.onLeader(ctx, func(ctx context.Context) error {
		n := r.node.Load()
		if err := n.LinearizableRead(ctx); err != nil {
			return err
		}
		return read(n.State().AppliedIndex())
	}, remote)
}

// liveTabletNodes lists the tablet nodes gossip reports alive, for placing
// new tables on; nil when this node does not gossip yet (then every
// registered tablet node is eligible).
func (r *Role) liveTabletNodes() []uint32 {
	g := r.deps.Gossip()
	if g == nil {
		return nil
	}
	var out []uint32
	for _, m := range g.Members() {
		if m.State == gossip.StateAlive && slices.Contains(m.Roles, metastate.RoleTablet) {
			out = append(out, m.NodeID)
		}
	}
	return out
}
