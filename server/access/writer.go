package access

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
)

// An idempotent writer id is bound to the principal that allocated it: with
// the id, AllocateWriterId hands out a token, an HMAC of the id and the
// principal under the cluster's writer key (in the metadata, set once), and
// a tablet node takes a batch of that writer only with the token, from
// that principal. Without it anybody who learned or guessed an id could
// send a batch under it, which the real writer's next batch would then meet
// as a "duplicate" and be dropped.

// writerTokenBytes is the size of a token (a truncated HMAC-SHA256).
const writerTokenBytes = 16

// WriterToken returns the token binding writer id to principal p.
func WriterToken(key []byte, id uint64, p identity.Principal) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("floe writer id\x00"))
	mac.Write(binary.BigEndian.AppendUint64(nil, id))
	mac.Write([]byte(p.String()))
	return mac.Sum(nil)[:writerTokenBytes]
}

// WriterKeys gives the writer key of the moment; nil while the node does
// not know it.
type WriterKeys interface {
	WriterKey() []byte
}

// checkWriter refuses a batch of an idempotent writer that does not come
// with its token from the principal the id was allocated to. Nodes and
// batches without a writer id pass; so does everything when the
// authorizer has no writer keys (no authentication).
func (a *Authorizer) checkWriter(c caller, batch, token []byte) error {
	if a.writerKeys == nil || c.Principal.IsNode() || len(batch) < record.HeaderSize {
		return nil // a short batch is refused by the handler, which says why
	}
	id := record.Batch(batch).WriterID()
	if id == record.NoWriterID {
		return nil
	}
	key := a.writerKeys.WriterKey()
	if key == nil {
		// Not known here yet: the id cannot have been checked, and the
		// key is on its way with the metadata.
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node does not know the writer key yet")
	}
	if !hmac.Equal(token, WriterToken(key, uint64(id), c.Principal)) {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED,
			"writer id %d was not allocated to %s: allocate a writer id of your own (AllocateWriterId)", id, c.Principal)
	}
	return nil
}
