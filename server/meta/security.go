package meta

import (
	"context"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// The security handlers: users and ACLs are commands like the catalog's,
// and their lists are read on the leader. Who may call them is decided
// before they run (server/access).

// PutUser creates a user or changes its credentials.
func (m *metaService) PutUser(ctx context.Context, req *pb.PutUserRequest) (*pb.CommandResponse, error) {
	if req.GetCreate() && req.GetAlter() {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "create and alter exclude each other")
	}
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_PutUser{PutUser: &pb.PutUser{
		User: req.GetUser(), Create: req.GetCreate(), Alter: req.GetAlter(), NowMs: time.Now().UnixMilli()}}})
}

// DeleteUser deletes a user.
func (m *metaService) DeleteUser(ctx context.Context, req *pb.DeleteUserRequest) (*pb.CommandResponse, error) {
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_DeleteUser{DeleteUser: &pb.DeleteUser{Name: req.GetName()}}})
}

// ListUsers lists the users, without their credentials.
func (m *metaService) ListUsers(ctx context.Context, req *pb.ListUsersRequest) (*pb.ListUsersResponse, error) {
	var resp *pb.ListUsersResponse
	err := m.r.read(ctx, false, func(uint64) error {
		users, err := m.r.node.Load().State().Users()
		resp = &pb.ListUsersResponse{Users: users}
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ListUsers(ctx, req)
		return err
	})
	return resp, err
}

// AddAcls adds ACL entries.
func (m *metaService) AddAcls(ctx context.Context, req *pb.AddAclsRequest) (*pb.CommandResponse, error) {
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AddAcls{AddAcls: &pb.AddAcls{Entries: req.GetEntries()}}})
}

// RemoveAcls removes ACL entries.
func (m *metaService) RemoveAcls(ctx context.Context, req *pb.RemoveAclsRequest) (*pb.CommandResponse, error) {
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_RemoveAcls{RemoveAcls: &pb.RemoveAcls{Entries: req.GetEntries()}}})
}

// ListAcls lists the ACL entries.
func (m *metaService) ListAcls(ctx context.Context, req *pb.ListAclsRequest) (*pb.ListAclsResponse, error) {
	var resp *pb.ListAclsResponse
	err := m.r.read(ctx, false, func(uint64) error {
		entries, err := m.r.node.Load().State().ACLs()
		resp = &pb.ListAclsResponse{Entries: entries}
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ListAcls(ctx, req)
		return err
	})
	return resp, err
}
