package clienttest

import (
	"context"
	"fmt"
	"slices"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// table is one table.
type table struct {
	rec     *pb.TableRecord
	schema  record.Schema
	keys    *kvKeys // nil for a log table
	buckets []*bucketLog
}

// metaService serves the Meta calls clients make: catalog, GetTable,
// AllocateWriterId. Every node answers as the leader would.
type metaService struct {
	pb.DRPCMetaUnimplementedServer
	c *Cluster
}

func (m *metaService) RaftStatus(context.Context, *pb.RaftStatusRequest) (*pb.RaftStatusResponse, error) {
	return &pb.RaftStatusResponse{NodeId: 1, State: "leader", LeaderId: 1, ClusterId: "clienttest"}, nil
}

func (m *metaService) CreateDatabase(_ context.Context, req *pb.CreateDatabaseRequest) (*pb.CommandResponse, error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.databases[req.Name]; ok {
		if req.IfNotExists {
			return &pb.CommandResponse{}, nil
		}
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "database %q exists", req.Name)
	}
	c.nextID++
	c.databases[req.Name] = c.nextID
	return &pb.CommandResponse{}, nil
}

func (m *metaService) ListDatabases(context.Context, *pb.ListDatabasesRequest) (*pb.ListDatabasesResponse, error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &pb.ListDatabasesResponse{}
	for name, id := range c.databases {
		resp.Databases = append(resp.Databases, &pb.DatabaseRecord{Id: id, Name: name})
	}
	slices.SortFunc(resp.Databases, func(a, b *pb.DatabaseRecord) int { return int(a.Id) - int(b.Id) })
	return resp, nil
}

// CreateTable creates a table; its buckets' leaders go round the nodes.
// Buckets 0 means 1. The primary key comes from the request or from the
// schema text; the bucket key of a primary-key table defaults to the
// primary key and must be a subset of it.
func (m *metaService) CreateTable(_ context.Context, req *pb.CreateTableRequest) (*pb.CommandResponse, error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	dbID, ok := c.databases[req.Database]
	if !ok {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE, "database %q", req.Database)
	}
	key := req.Database + "." + req.Name
	if t, ok := c.tables[key]; ok {
		if req.IfNotExists {
			return &pb.CommandResponse{Result: &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t.rec}, Unchanged: true}}, nil
		}
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "table %s exists", key)
	}
	s, err := record.ParseSchema(req.Schema)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%v", err)
	}
	if len(req.PrimaryKey) > 0 {
		s.PrimaryKey = slices.Clone(req.PrimaryKey)
		if err := s.Validate(); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%v", err)
		}
	}
	bucketKey := req.BucketKey
	if len(bucketKey) == 0 {
		bucketKey = s.PrimaryKey
	}
	var keys *kvKeys
	switch {
	case len(s.PrimaryKey) > 0:
		if keys, err = newKVKeys(s, bucketKey); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%v", err)
		}
	case len(bucketKey) > 0:
		if _, err := record.NewKeyEncoder(s, bucketKey); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "bucket key: %v", err)
		}
	}
	buckets := max(req.Buckets, 1)
	c.nextID++
	sv := &pb.SchemaVersion{Id: 1}
	for _, col := range s.Columns {
		sv.Columns = append(sv.Columns, &pb.Column{Name: col.Name, Type: col.Type.String(), Nullable: col.Nullable})
	}
	rec := &pb.TableRecord{Id: c.nextID, DatabaseId: dbID, Database: req.Database, Name: req.Name,
		Schemas: []*pb.SchemaVersion{sv}, PrimaryKey: slices.Clone(s.PrimaryKey), BucketKey: slices.Clone(bucketKey),
		Buckets: buckets, Replication: 1, Properties: req.Properties}
	t := &table{rec: rec, schema: s, keys: keys}
	for b := range buckets {
		t.buckets = append(t.buckets, newBucketLog(c.nodes[int(b)%len(c.nodes)].id))
	}
	c.tables[key] = t
	c.byID[rec.Id] = t
	return &pb.CommandResponse{Result: &pb.CommandResult{Value: &pb.CommandResult_Table{Table: rec}}}, nil
}

func (m *metaService) GetTable(_ context.Context, req *pb.GetTableRequest) (*pb.GetTableResponse, error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tables[req.Database+"."+req.Name]
	if !ok {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "table %s.%s", req.Database, req.Name)
	}
	resp := &pb.GetTableResponse{Table: t.rec}
	for i, b := range t.buckets {
		resp.Buckets = append(resp.Buckets, &pb.BucketRecord{TableId: t.rec.Id, Bucket: int32(i),
			Replicas: []uint32{b.leader}, Leader: b.leader, LeaderEpoch: b.epoch, Isr: []uint32{b.leader}})
	}
	for _, n := range c.nodes {
		resp.Nodes = append(resp.Nodes, &pb.NodeRecord{Id: n.id, Roles: []string{"meta", "tablet"}, RpcAddress: n.addr})
	}
	return resp, nil
}

// AllocateWriterId hands out 1, 2, 3, …; a repeated request id gets its
// first answer.
func (m *metaService) AllocateWriterId(_ context.Context, req *pb.AllocateWriterIdRequest) (*pb.AllocateWriterIdResponse, error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.writerIDs[string(req.RequestId)]; ok && len(req.RequestId) > 0 {
		return &pb.AllocateWriterIdResponse{WriterId: id}, nil
	}
	c.nextWriter++
	c.writerIDs[string(req.RequestId)] = c.nextWriter
	return &pb.AllocateWriterIdResponse{WriterId: c.nextWriter}, nil
}

// CreateTable creates a table directly: schema in the CLI syntax (with a
// PRIMARY KEY for a primary-key table), buckets (0: 1), optional bucket key.
// It returns the table id.
func (c *Cluster) CreateTable(database, name, schema string, buckets int32, bucketKey ...string) (uint64, error) {
	m := &metaService{c: c}
	if _, err := m.CreateDatabase(context.Background(), &pb.CreateDatabaseRequest{Name: database, IfNotExists: true}); err != nil {
		return 0, err
	}
	resp, err := m.CreateTable(context.Background(), &pb.CreateTableRequest{Database: database, Name: name,
		Schema: schema, Buckets: buckets, BucketKey: bucketKey})
	if err != nil {
		return 0, fmt.Errorf("clienttest: create table: %w", err)
	}
	return resp.GetResult().GetTable().GetId(), nil
}
