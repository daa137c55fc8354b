package metastate

import (
	"github.com/floedb/floe/transport/pb"
)

// allocateWriterID hands out the next idempotent writer id, from 1. A
// retried request id gets the id it got first, so no writer id is handed
// out twice to one request nor shared by two.
func (a *applier) allocateWriterID(*pb.AllocateWriterId) (*pb.CommandResult, error) {
	id, err := nextID(a.tx, keyLastWriterID)
	if err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_WriterId{WriterId: id}}, nil
}
