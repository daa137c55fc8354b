package raftmeta

import (
	"strings"
	"testing"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// A command that can only be refused (or changes nothing whatever the
// state) is answered without being proposed: nothing of it reaches the Raft
// log, however often it is retried.
func TestProposeDecidesInvalidCommandsWithoutLogging(t *testing.T) {
	g := newGroup(t, 1)
	leader, _ := g.leader()
	ctx := t.Context()
	if res, err := leader.Propose(ctx, createDB("db")); err != nil || metastate.ResultError(res) != nil {
		t.Fatalf("propose a valid command: %v %v", err, res)
	}
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		cmd  *pb.Command
		code pb.ErrorCode // 0 with unchanged: decided as a no-op
	}{
		{"database name", createDB(long), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"table name", &pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "bad name",
			Columns: []*pb.Column{{Name: "a", Type: "INT"}}}}}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"column name", &pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "t",
			Columns: []*pb.Column{{Name: long, Type: "INT"}}}}}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"property value", &pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "t",
			Columns: []*pb.Column{{Name: "a", Type: "INT"}}, Properties: map[string]string{"log.ttl": long}}}}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"oversized command", &pb.Command{Op: &pb.Command_CreateTable{CreateTable: &pb.CreateTable{Database: "db", Name: "t",
			Columns: []*pb.Column{{Name: "a", Type: strings.Repeat("x", metastate.MaxCommandBytes)}}}}}, pb.ErrorCode_ERROR_CODE_TOO_LARGE},
		{"node record", &pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{Id: 9,
			Roles: []string{"tablet"}, RpcAddress: long}}}}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"drop of a table no name allows", &pb.Command{Op: &pb.Command_DropTable{DropTable: &pb.DropTable{Database: "db", Name: long}}},
			pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE},
		{"drop if exists", &pb.Command{Op: &pb.Command_DropDatabase{DropDatabase: &pb.DropDatabase{Name: long, IfExists: true}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := leader.Status().LastLogIndex
			for range 3 {
				res, err := leader.Propose(ctx, tc.cmd)
				if err != nil {
					t.Fatal(err)
				}
				if res.GetCode() != tc.code || (tc.code == 0) != res.GetUnchanged() {
					t.Fatalf("result %v: want code %v (unchanged when 0)", res, tc.code)
				}
			}
			if after := leader.Status().LastLogIndex; after != before {
				t.Fatalf("the Raft log went from index %d to %d: the command was proposed", before, after)
			}
		})
	}
}
