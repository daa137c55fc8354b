// Package clienttest runs a stand-in for a Floe cluster inside a test
// process: nodes on loopback that serve the Meta and Tablet services from
// memory, for testing code that uses the client without a real cluster.
//
// Produce checks batches as a leader would (CRC, rows against the schema,
// writer sequences: a repeated sequence is answered with the original
// offsets), stamps offsets and times, and commits at once unless a test
// holds the high watermark back. Fetch long-polls below the high watermark.
//
// Primary-key tables keep each bucket's rows in a map, last row wins: PutKv
// checks its batch the same way, applies its upserts (whole rows or target
// columns) and deletes, and appends their changelog (+I, -U/+U, -D) to the
// bucket's log, or a control no-op batch when nothing changed; Lookup and
// PrefixLookup read the map (a linearizable one appends a control barrier
// batch). Tests steer it: move bucket leaders, inject errors, hold produce
// and lookup calls.
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Options configure a Cluster. The zero value is usable.
type Options struct {
	// Nodes is the number of nodes, ids 1 to Nodes. Default 1.
	Nodes int
}

// Cluster is the running stand-in. Its methods are safe for concurrent use.
type Cluster struct {
	nodes []*node
	codec *record.Codec
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every append or leader change
	databases   map[string]uint64
	tables      map[string]*table // by "db.name"
	byID        map[uint64]*table
	nextID      uint64
	nextWriter  uint64
	writerIDs   map[string]uint64 // by request id
	gate        chan struct{}     // non-nil: Produce and PutKv wait for it to close
	produces    int               // Produce and PutKv calls that reached the state
	lookupGate  chan struct{}     // non-nil: Lookup and PrefixLookup wait for it to close
	lookups     int               // Lookup and PrefixLookup calls received
	lookupFault map[bucketRef][]pb.ErrorCode
	faults      map[bucketRef][]fault
	fetchErrors map[bucketRef]pb.ErrorCode
}

type bucketRef struct {
	table  uint64
	bucket int32
}

// fault is one injected Produce error.
type fault struct {
	code        pb.ErrorCode
	afterAppend bool // append the batch, then answer with the error
}

// node is one listener serving both services.
type node struct {
	id   uint32
	addr string
	lis  *transport.Listener
}

// Start starts a cluster on loopback. Close stops it.
func Start(opts Options) (*Cluster, error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	codec, err := record.NewCodec()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cluster{
		codec:       codec,
		stop:        cancel,
		changed:     make(chan struct{}),
		databases:   make(map[string]uint64),
		tables:      make(map[string]*table),
		byID:        make(map[uint64]*table),
		writerIDs:   make(map[string]uint64),
		faults:      make(map[bucketRef][]fault),
		fetchErrors: make(map[bucketRef]pb.ErrorCode),
		lookupFault: make(map[bucketRef][]pb.ErrorCode),
	}
	for i := range opts.Nodes {
		lis, err := transport.Listen("127.0.0.1:0", transport.ListenerConfig{})
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		n := &node{id: uint32(i + 1), addr: lis.Addr().String(), lis: lis}
		c.nodes = append(c.nodes, n)
		srv := transport.NewServer(transport.ServerConfig{})
		if err := pb.DRPCRegisterMeta(srv.Mux(), &metaService{c: c}); err != nil {
			_ = c.Close()
			return nil, err
		}
		if err := pb.DRPCRegisterTablet(srv.Mux(), &tabletService{c: c, node: n.id}); err != nil {
			_ = c.Close()
			return nil, err
		}
		c.wg.Go(func() { _ = lis.Run(ctx) })
		c.wg.Go(func() { _ = srv.Serve(ctx, lis.DRPC()) })
	}
	return c, nil
}

// Close stops every node and waits for them.
func (c *Cluster) Close() error {
	c.stop()
	for _, n := range c.nodes {
		_ = n.lis.Close()
	}
	c.wg.Wait()
	c.codec.Close()
	return nil
}

// Addrs returns the nodes' RPC addresses, node 1 first.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr
	}
	return out
}

// broadcastLocked wakes the fetches waiting for data.
func (c *Cluster) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// ErrUnknownTable is returned by the test hooks for a table id not created.
var ErrUnknownTable = errors.New("clienttest: unknown table")

// bucketLocked returns a bucket of a table, or an error for test hooks.
func (c *Cluster) bucketLocked(tableID uint64, bucket int32) (*bucketLog, error) {
	t := c.byID[tableID]
	if t == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownTable, tableID)
	}
	if bucket < 0 || int(bucket) >= len(t.buckets) {
		return nil, fmt.Errorf("clienttest: table %d has no bucket %d", tableID, bucket)
	}
	return t.buckets[bucket], nil
}

// SetLeader makes node the leader of a bucket, in a new leader epoch.
func (c *Cluster) SetLeader(tableID uint64, bucket int32, node uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.bucketLocked(tableID, bucket)
	if err != nil {
		return err
	}
	b.leader = node
	b.epoch++
	c.broadcastLocked()
	return nil
}

// FailProduce makes the next Produce or PutKv to a bucket that reaches its leader
// fail with code; with afterAppend the batch is appended first, as when an
// acknowledgement is lost. Faults queue up in call order.
func (c *Cluster) FailProduce(tableID uint64, bucket int32, code pb.ErrorCode, afterAppend bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ref := bucketRef{tableID, bucket}
	c.faults[ref] = append(c.faults[ref], fault{code: code, afterAppend: afterAppend})
}

// FailFetch makes the next Fetch of a bucket answer code for it.
func (c *Cluster) FailFetch(tableID uint64, bucket int32, code pb.ErrorCode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetchErrors[bucketRef{tableID, bucket}] = code
}

// HoldProduce makes Produce and PutKv calls wait until release is called.
func (c *Cluster) HoldProduce() (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gate := make(chan struct{})
	c.gate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.gate == gate {
				c.gate = nil
			}
			c.mu.Unlock()
			close(gate)
		})
	}
}

// HoldHighWatermark keeps a bucket's high watermark at most hw (the batches
// past it are written, not committed); -1 lets it follow the log end again.
func (c *Cluster) HoldHighWatermark(tableID uint64, bucket int32, hw int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.bucketLocked(tableID, bucket)
	if err != nil {
		return err
	}
	b.hwCap = hw
	c.broadcastLocked()
	return nil
}

// Produces is the number of Produce and PutKv calls that reached the cluster's state
// (after any HoldProduce), failed ones included.
func (c *Cluster) Produces() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.produces
}

// StoredRecord is one record of a bucket's log.
type StoredRecord struct {
	Offset int64
	Change record.ChangeType
	// Control marks a record of a control batch, whose Row starts with a
	// record.ControlKind.
	Control   bool
	Timestamp int64 // commit time, Unix milliseconds
	WriterID  int64
	Sequence  int32
	Row       []byte
}

// Records returns every record of a bucket in offset order, committed or
// not.
func (c *Cluster) Records(tableID uint64, bucket int32) ([]StoredRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.bucketLocked(tableID, bucket)
	if err != nil {
		return nil, err
	}
	var out []StoredRecord
	for _, batch := range b.batches {
		it, _, err := batch.Records(c.codec, nil)
		if err != nil {
			return nil, err
		}
		for it.Next() {
			r := it.Record()
			out = append(out, StoredRecord{Offset: r.Offset, Change: r.Change,
				Control: batch.PayloadFormat() == record.PayloadControl, Timestamp: batch.CommitTimestamp(),
				WriterID: batch.WriterID(), Sequence: batch.BatchSequence(), Row: append([]byte(nil), r.Data...)})
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HighWatermark returns a bucket's high watermark.
func (c *Cluster) HighWatermark(tableID uint64, bucket int32) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.bucketLocked(tableID, bucket)
	if err != nil {
		return 0, err
	}
	return b.highWatermark(), nil
}

// CorruptBatch flips a bit in the last byte of the batch holding offset, as
// a damaged disk or wire would: readers must notice by its CRC.
func (c *Cluster) CorruptBatch(tableID uint64, bucket int32, offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.bucketLocked(tableID, bucket)
	if err != nil {
		return err
	}
	for _, batch := range b.batches {
		if batch.BaseOffset() <= offset && offset <= batch.LastOffset() {
			batch[len(batch)-1] ^= 1
			return nil
		}
	}
	return fmt.Errorf("clienttest: no batch holds offset %d", offset)
}
