package meta

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// writerKey returns the cluster's writer key, the key that binds writer ids
// to principals (server/access). A cluster gets it on the first writer id
// allocated to an authenticated caller: this node proposes a random one
// (the first committed wins, so racing nodes agree) and waits until its own
// copy of the metadata has it.
func (r *Role) writerKey(ctx context.Context) ([]byte, error) {
	if k := r.deps.WriterKey(); k != nil {
		return k, nil
	}
	key := make([]byte, metastate.WriterKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if _, err := r.propose(ctx, &pb.Command{Op: &pb.Command_InitWriterKey{InitWriterKey: &pb.InitWriterKey{Key: key}}}); err != nil {
		return nil, err
	}
	pace := backoff.Backoff{Min: time.Millisecond, Max: 100 * time.Millisecond}
	for {
		if k := r.deps.WriterKey(); k != nil {
			return k, nil
		}
		if !pace.Wait(ctx) {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "waiting for the writer key to reach node %d: %v", r.cfg.NodeID, ctx.Err())
		}
	}
}
