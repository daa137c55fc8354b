package meta

import (
	"context"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// maxAddedColumns bounds the columns of one AlterTable request.
const maxAddedColumns = 1024

func (m *metaService) AlterTable(ctx context.Context, req *pb.AlterTableRequest) (*pb.CommandResponse, error) {
	cmd, err := AlterTableCommand(req)
	if err != nil {
		return nil, err
	}
	return m.command(ctx, cmd)
}

// AlterTableCommand is the command an AlterTable request proposes, its
// added columns parsed (the state machine, which imports no storage
// package, checks their names and nullability but takes their types as
// given: canonical, from here).
func AlterTableCommand(req *pb.AlterTableRequest) (*pb.Command, error) {
	if n := len(req.AddColumns); n > maxAddedColumns {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "%d columns to add; at most %d", n, maxAddedColumns)
	}
	columns := make([]*pb.Column, 0, len(req.AddColumns))
	for _, src := range req.AddColumns {
		sch, err := record.ParseSchema(src)
		switch {
		case err != nil:
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "add column %.256q: %v", src, err)
		case len(sch.Columns) != 1:
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
				"add column %.256q: want one column, like 'note STRING'", src)
		case len(sch.PrimaryKey) > 0:
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
				"add column %.256q: the primary key cannot change: the stored rows are keyed by it", src)
		}
		c := sch.Columns[0]
		columns = append(columns, &pb.Column{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable})
	}
	return &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_AlterTable{AlterTable: &pb.AlterTable{
		Database: req.Database, Name: req.Name, SetProperties: req.SetProperties, ResetProperties: req.ResetProperties,
		AddColumns: columns, Comment: req.Comment, TableId: req.TableId, ExpectedSchemaId: req.ExpectedSchemaId,
		Checks: metastate.CreateTableChecks,
	}}}, nil
}
