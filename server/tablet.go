package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/server/replica/kvreplica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// poolDialer hands out Tablet clients over the node's connection pool.
type poolDialer struct{ pool *transport.Pool }

func (d poolDialer) Tablet(addr string) pb.DRPCTabletClient {
	return pb.NewDRPCTabletClient(d.pool.Conn(addr))
}

// metaClient reaches the metadata leader: through this node's own Raft view
// on a meta node, through the meta nodes it knows otherwise.
type metaClient struct{ s *Server }

func (c metaClient) AdjustIsr(ctx context.Context, change *pb.AdjustIsr, requestID []byte) (*pb.BucketRecord, error) {
	req := &pb.AdjustIsrRequest{Change: change, RequestId: requestID}
	var resp *pb.AdjustIsrResponse
	err := c.s.callMeta(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.AdjustIsr(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.Bucket, nil
}

// ReportDamaged proposes the report through the metadata leader.
func (c metaClient) ReportDamaged(ctx context.Context, report *pb.ReportDamagedReplica, requestID []byte) (*pb.BucketRecord, error) {
	res, err := c.s.propose(ctx, &pb.Command{RequestId: requestID,
		Op: &pb.Command_ReportDamagedReplica{ReportDamagedReplica: report}})
	if err != nil {
		return nil, err
	}
	return res.GetBucket(), nil
}

// callMeta runs fn against a meta node: this one when it has the meta role,
// otherwise each known meta address in turn, each attempt bounded by
// forwardTimeout (a paused meta node never answers).
func (s *Server) callMeta(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error {
	addrs := s.metaAddresses()
	var lastErr error = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "no meta node known")
	for _, a := range addrs {
		actx, cancel := context.WithTimeout(ctx, forwardTimeout)
		err := fn(actx, pb.NewDRPCMetaClient(s.pool.Conn(a)))
		expired := actx.Err() != nil
		cancel()
		if err != nil && expired && ctx.Err() == nil {
			err = transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT, "meta node %s did not answer within %v", a, forwardTimeout)
		}
		if err == nil || !transport.IsRetriable(err) {
			return err
		}
		lastErr = err
	}
	return lastErr
}

// metaAddresses lists meta nodes to talk to, this node first when it is one.
func (s *Server) metaAddresses() []string {
	var out []string
	if s.cfg.HasRole(RoleMeta) {
		out = append(out, s.advertise)
	}
	for _, p := range s.metaPeers() {
		if p.RpcAddress != s.advertise {
			out = append(out, p.RpcAddress)
		}
	}
	for _, a := range s.cfg.Join {
		if a != s.advertise {
			out = append(out, a)
		}
	}
	return out
}

// startTablet opens the replica manager and serves the Tablet service; the
// watch loop feeds it the metadata.
func (s *Server) startTablet(ctx context.Context) error {
	tabletDir := filepath.Join(s.cfg.DataDir, "tablet")
	kept := func(id kvstore.StoreID) bool {
		_, err := os.Stat(replica.Dir(tabletDir, replica.BucketID{TableID: id.Table, Bucket: int32(id.Bucket)}))
		return !errors.Is(err, fs.ErrNotExist) // only a folder known gone counts
	}
	kv, err := kvreplica.New(kvreplica.Config{DB: s.kvConfig(), ReplicaKept: kept, BufferBytes: s.cfg.KVBufferBytes, Logger: s.log})
	if err != nil {
		return err
	}
	var remote *tiering.Reader
	if s.cfg.Remote != nil {
		if remote, err = tiering.NewReader(tiering.ReaderConfig{Store: s.cfg.Remote}); err != nil {
			kv.Close()
			return err
		}
	}
	dropped := make(chan uint64, 1024)
	onDropped := func(tableID uint64) {
		select {
		case dropped <- tableID:
		default: // the objects stay as garbage; a full queue is a flood of drops
			s.log.Warn("too many dropped tables queued for remote cleanup; leaving this one's objects", "table", tableID)
		}
	}
	if s.cfg.Remote == nil {
		onDropped = nil
	}
	m, err := replica.New(replica.Config{
		NodeID:         s.cfg.NodeID,
		Remote:         remote,
		RemoteStore:    s.cfg.Remote,
		OnTableDropped: onDropped,
		Dir:            tabletDir,
		Log:            logstore.Config{Sync: s.cfg.LogSync, SegmentMaxBytes: s.cfg.SegmentMaxBytes},
		MaxBatchBytes:  s.cfg.MaxBatchBytes,
		KV:             kv,
		Meta:           metaClient{s},
		Dialer:         poolDialer{s.pool},
		Logger:         s.log,
		OnFail:         func(err error) { s.stop(fmt.Errorf("server: a bucket replica's log failed: %w", err)) },
	})
	if err != nil {
		kv.Close()
		return err
	}
	s.kvTables, s.replicas = kv, m
	s.tabletReady.Store(true)
	s.goRun(func() { s.follower.run(ctx) })
	if s.cfg.Remote != nil {
		s.goRun(func() { s.tieringLoop(ctx, dropped) })
	}
	return nil
}

// maxBatchBytes is the largest batch the node's replicas take.
func (s *Server) maxBatchBytes() int {
	if s.cfg.MaxBatchBytes > 0 {
		return s.cfg.MaxBatchBytes
	}
	return replica.DefaultMaxBatchBytes
}

// maxBatchFor is the largest batch a client should send to a table: the
// node's limit, and no more than a segment of the table's log holds
// (log.segment.bytes, else the node's SegmentMaxBytes, else the property's
// default). An upsert batch to a primary-key table gets a quarter of it:
// its changelog, with the -U image of every row it updates, can be larger
// than the batch.
func (s *Server) maxBatchFor(t *pb.TableRecord) int {
	segment := tableprop.DefaultLogSegmentBytes
	v, err := tableprop.ParseStored(t.GetProperties(), tableprop.Table{Replication: int(t.GetReplication()),
		PrimaryKey: len(t.GetPrimaryKey()) > 0, CreatedChecks: t.GetChecks()})
	_, set := t.GetProperties()[tableprop.LogSegmentBytes]
	switch {
	case err == nil && (set || s.cfg.SegmentMaxBytes == 0):
		segment = int(v.LogSegmentBytes)
	case s.cfg.SegmentMaxBytes > 0:
		segment = int(s.cfg.SegmentMaxBytes)
	}
	if len(t.GetPrimaryKey()) > 0 {
		segment /= 4
	}
	return min(s.maxBatchBytes(), segment)
}

// newFollower makes the tablet role's metadata follower: it watches the meta
// nodes once this run's registration is committed and hands the replica
// manager what it may act on.
func (s *Server) newFollower() *metaFollower {
	return newMetaFollower(metaFollowerConfig{
		addrs: s.metaAddresses,
		open: func(ctx context.Context, addr string, from uint64) (metaStream, error) {
			return pb.NewDRPCMetaClient(s.pool.Conn(addr)).WatchMetadata(ctx,
				&pb.WatchMetadataRequest{NodeId: s.cfg.NodeID, FromIndex: from})
		},
		apply:        func(u *pb.MetadataUpdate) { s.replicas.Apply(u) },
		registration: s.registration,
		log:          s.log,
	})
}

// registration waits until this run's registration is committed and
// returns its Raft index (the node epoch).
func (s *Server) registration(ctx context.Context) (uint64, error) {
	select {
	case <-s.registered:
		return s.registeredAt.Load(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// kvConfig configures the node's KV database, which the stores of all its
// primary-key bucket replicas share, with the node's row cache.
func (s *Server) kvConfig() kvstore.Config {
	kv := s.cfg.KV
	kv.Dir = filepath.Join(s.cfg.DataDir, "tablet", "kv")
	size := s.cfg.KVRowCacheBytes
	if size == 0 {
		size = DefaultKVRowCacheBytes()
	}
	kv.RowCache = kvstore.NewRowCache(size) // nil when size < 0
	s.log.Info("KV row cache", "max_bytes", max(size, 0))
	return kv
}
