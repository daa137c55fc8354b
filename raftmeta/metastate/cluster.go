package metastate

import (
	"github.com/floedb/floe/transport/pb"
)

// maxClusterIDBytes bounds a cluster id.
const maxClusterIDBytes = 256

// initCluster fixes the cluster id once; the same id again is a no-op, and
// another id is refused as FENCED.
func (a *applier) initCluster(c *pb.InitCluster) (*pb.CommandResult, error) {
	id := c.GetClusterId()
	if id == "" {
		return nil, errorf(codeInvalidRequest, "empty cluster id")
	}
	if len(id) > maxClusterIDBytes {
		return nil, errorf(codeInvalidRequest, "cluster id of %d bytes exceeds %d", len(id), maxClusterIDBytes)
	}
	meta := a.tx.Bucket(bucketMeta)
	switch cur := string(meta.Get(keyClusterID)); cur {
	case id:
		return &pb.CommandResult{Unchanged: true}, nil
	case "":
		if err := meta.Put(keyClusterID, []byte(id)); err != nil {
			return nil, err
		}
		return &pb.CommandResult{}, nil
	default:
		return nil, errorf(codeFenced, "cluster already initialized with id %q, refusing id %q", cur, id)
	}
}
