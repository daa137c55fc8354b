package replica

import (
	"sync/atomic"

	"github.com/floedb/floe/transport/pb"
)

// remoteCopies is what a replica knows of its bucket's copies in remote
// storage, as the metadata (or this node's own commits) last showed them.
// Readers take no lock: each field is replaced whole.
type remoteCopies struct {
	// log is the committed remote log, the newest version seen
	// (tiering.go); nil: none.
	log atomic.Pointer[pb.RemoteLog]
	// kvSnapshots are the committed KV snapshots, oldest first
	// (primary-key tables; kvsnapshot.go).
	kvSnapshots atomic.Pointer[[]*pb.KVSnapshot]
	// fence is the bucket's remote_fence_epoch as last assigned: non-zero
	// while an unclean election's cut of the remote copies is pending
	// (tiering.go).
	fence atomic.Int32
	// lakeOffset is the bucket's lake_offset as last assigned: what the
	// lake holds of the bucket, below which a lake-enabled table's log may
	// expire (tiering.go).
	lakeOffset atomic.Int64
}
