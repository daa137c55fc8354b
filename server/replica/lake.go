package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// The union read. A lake-enabled table's records the log no longer holds
// (local or remote: log.ttl let them go once the lake had them) are read
// from the lake: a consumer's fetch below the log's start is answered
// with log batches made from the lake's data files (lake.BatchWriter), at
// the records' own offsets and timestamps, projected as asked, up to the
// offset the committed lake version holds the bucket's records below;
// from there the log holds every record (log.ttl never deletes past it),
// so the next fetch reads the log: no gap and no duplicate. The log is
// read wherever it still has an offset: it is the cheaper of the two.

// Lake reading limits.
const (
	// maxLakeScans bounds the data files a node keeps open for consumers
	// going through the lake (each holds a read buffer per column and a
	// batch of rows); the least recently used closes first.
	maxLakeScans = 32
	// lakeScanIdle closes a scan no fetch continued for this long.
	lakeScanIdle = time.Minute
	// lakeScanRows is the rows a scan decodes at a time.
	lakeScanRows = 8192
)

// lakeReader keeps, for the node's consumers, the index of each lake
// table's newest version it read and the scans of data files they are
// going through.
type lakeReader struct {
	store tiering.ObjectStore

	mu      sync.Mutex
	indexes map[string]*lakeIndexSlot // by lake prefix
	scans   []*lakeScan               // idle, most recently used last
}

type lakeIndexSlot struct {
	mu sync.Mutex // held while the index is read
	ix *lake.Index
}

// lakeScan is a scan a consumer's fetch left open, with the batch writer
// of the fetch's schema version and columns, the chunk it was serving
// and the offset the consumer reads next.
type lakeScan struct {
	key     lakeScanKey
	scan    *lake.FileScan
	w       *lake.BatchWriter
	pending *lake.Chunk
	taken   int // rows of pending served
	used    time.Time
}

type lakeScanKey struct {
	file     string
	position int64 // the offset after the last record served
	schemaID int32
	columns  string // the projection, as its bytes; "" for every column
}

func newLakeReader(store tiering.ObjectStore) *lakeReader {
	return &lakeReader{store: store, indexes: map[string]*lakeIndexSlot{}}
}

// index returns the index of the lake version whose metadata file is
// metadataKey, reading it (and only the manifests the last one read
// lacks) when it is newer.
func (l *lakeReader) index(ctx context.Context, prefix, metadataKey string) (*lake.Index, error) {
	l.mu.Lock()
	slot := l.indexes[prefix]
	if slot == nil {
		slot = &lakeIndexSlot{}
		l.indexes[prefix] = slot
	}
	l.mu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.ix != nil && slot.ix.MetadataKey == metadataKey {
		return slot.ix, nil
	}
	ix, err := lake.NewTable(l.store, prefix).ReadIndex(ctx, metadataKey, slot.ix)
	if err != nil {
		return nil, err
	}
	slot.ix = ix
	return ix, nil
}

// take returns the idle scan a consumer left at key, if any.
func (l *lakeReader) take(key lakeScanKey) *lakeScan {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.scans {
		if s.key == key {
			l.scans = append(l.scans[:i], l.scans[i+1:]...)
			return s
		}
	}
	return nil
}

// put keeps s for the consumer's next fetch, closing the least recently
// used and the idle beyond their time.
func (l *lakeReader) put(s *lakeScan) {
	now := time.Now()
	s.used = now
	l.mu.Lock()
	l.scans = append(l.scans, s)
	var closing []*lakeScan
	kept := l.scans[:0]
	for i, o := range l.scans {
		if len(l.scans)-i > maxLakeScans || now.Sub(o.used) > lakeScanIdle {
			closing = append(closing, o)
		} else {
			kept = append(kept, o)
		}
	}
	l.scans = kept
	l.mu.Unlock()
	for _, o := range closing {
		o.close()
	}
}

func (s *lakeScan) close() {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
	}
	s.scan.Close()
}

// closeAll closes every idle scan (the manager closing).
func (l *lakeReader) closeAll() {
	l.mu.Lock()
	scans := l.scans
	l.scans = nil
	l.mu.Unlock()
	for _, s := range scans {
		s.close()
	}
}

// lakeRange is where the lake holds the bucket's records: from start to
// below end, by the committed version this node knows; ok false when it
// holds none (no lake, or no version yet).
func (r *Replica) lakeRange(ctx context.Context) (ix *lake.Index, start, end int64, ok bool, err error) {
	info := r.table()
	ls := info.lake
	if r.mgr.lake == nil || ls == nil || ls.MetadataKey == "" || ls.Prefix == "" {
		return nil, 0, 0, false, nil
	}
	if ix, err = r.mgr.lake.index(ctx, ls.Prefix, ls.MetadataKey); err != nil {
		return nil, 0, 0, false, r.lakeError(err)
	}
	b := lake.BucketKey{PhysicalID: r.id.TableID, Bucket: r.id.Bucket}
	if start, ok = ix.Start(b); !ok {
		return nil, 0, 0, false, nil
	}
	if r.remoteFenced() {
		// An unclean election: the lake holds the old history, which the
		// log's may contradict past a point its leader has not cut at yet
		// (Lake 4).
		return nil, 0, 0, false, r.errRemoteFenced()
	}
	// Below the bucket's lake offset only: a fence cut lowers it before
	// the lake's files are cut back to it.
	end, _ = ix.End(b)
	end = min(end, r.remote.lakeOffset.Load())
	if start >= end {
		return nil, 0, 0, false, nil
	}
	return ix, start, end, true, nil
}

// lakeError maps a failed read of the lake to the wire: damage is
// corrupt, the rest (the store unreachable, say) retriable.
func (r *Replica) lakeError(err error) error {
	if errors.Is(err, lake.ErrInvalidMetadata) || errors.Is(err, lake.ErrInvalidData) {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT, "bucket %s: the lake: %v", r.id, err)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "bucket %s: reading the lake: %v", r.id, err)
}

// serveLake answers a consumer's fetch below the log's start from the
// lake, when the lake has the offset: batches from it on, about budget
// bytes. served is false when the lake does not hold the offset. A fetch
// in a run of offsets that holds no record up to the lake's end (a
// control batch's, at the end of a file) is served from the log at the
// lake's end, which the log holds.
func (r *Replica) serveLake(ctx context.Context, fb *pb.FetchBucket, budget int, out *pb.FetchedBucket) (served bool, err error) {
	ix, _, end, ok, err := r.lakeRange(ctx)
	if err != nil || !ok {
		return false, err
	}
	b := lake.BucketKey{PhysicalID: r.id.TableID, Bucket: r.id.Bucket}
	info := r.table()
	schema, schemaID := info.schema, info.schemaID
	cols := make([]int, 0, len(fb.Columns))
	for _, c := range fb.Columns {
		if int(c) < len(schema.Columns) { // columns this node does not know yet read as null at the client
			cols = append(cols, int(c))
		}
	}
	projected := len(fb.Columns) > 0
	if !projected {
		for i := range schema.Columns {
			cols = append(cols, i)
		}
	}
	key := lakeScanKey{position: fb.Offset, schemaID: schemaID, columns: columnsKey(fb.Columns)}
	offset := fb.Offset
	for offset < end {
		span, err := ix.Find(b, offset)
		if errors.Is(err, lake.ErrNotInLake) {
			return false, nil
		}
		if err != nil {
			return false, r.lakeError(err)
		}
		key.file = span.Key
		s := r.mgr.lake.take(key)
		if s == nil {
			out := schema
			if projected {
				out = arrowlog.SubSchema(schema, cols)
			}
			w, err := lake.NewBatchWriter(out, int16(schemaID), projected)
			if err != nil {
				return false, r.lakeError(err)
			}
			if info.primaryKey {
				w.AsInserts() // the table's rows as of the lake's version
			}
			fields := make([]int, len(cols))
			for i, c := range cols {
				if c < len(ix.Schema.Fields) && ix.Schema.Fields[c].Name == schema.Columns[c].Name {
					fields[i] = ix.Schema.Fields[c].ID
				}
			}
			scan, err := lake.NewTable(r.mgr.lake.store, info.lake.Prefix).OpenScan(ctx, span, ix.Schema, w.ScanColumns(fields), offset, lakeScanRows)
			if err != nil {
				return false, r.lakeError(err)
			}
			s = &lakeScan{key: key, scan: scan, w: w}
		}
		data, done, err := s.serve(ctx, out.Records, budget, end)
		out.Records = data
		if err != nil {
			s.close()
			return false, r.lakeError(err)
		}
		if done {
			s.close()
		} else {
			r.mgr.lake.put(s)
		}
		if len(out.Records) > 0 {
			return true, nil
		}
		offset = span.Next // nothing left in this file past the offset
		key.position = offset
	}
	// No record from the offset to the lake's end: the log goes on there.
	at := proto.Clone(fb).(*pb.FetchBucket)
	at.Offset = end
	return true, r.serveConsumer(ctx, at, budget, out)
}

// serve appends the scan's next batches below offset end to data, about
// budget bytes, and says whether the file is done (or the rest of it at
// or past end); the scan's key moves to the offset after the last record
// served.
func (s *lakeScan) serve(ctx context.Context, data []byte, budget int, end int64) ([]byte, bool, error) {
	for len(data) < budget {
		if s.pending != nil && s.taken < s.pending.Rows() && s.pending.Offsets[s.taken] >= end {
			return data, true, nil
		}
		if s.pending == nil || s.taken == s.pending.Rows() {
			if s.pending != nil {
				s.pending.Release()
				s.pending = nil
			}
			c, err := s.scan.Next(ctx, lakeScanRows)
			if err == io.EOF {
				return data, true, nil
			}
			if err != nil {
				return data, true, err
			}
			s.pending, s.taken = c, 0
		}
		var n int
		var err error
		if data, n, err = s.w.AppendBelow(data, s.pending, s.taken, budget-len(data), end); err != nil {
			return data, true, err
		}
		s.taken += n
		if n == 0 {
			return data, true, nil // the next row is at or past end
		}
		s.key.position = s.pending.Offsets[s.taken-1] + 1
	}
	return data, false, nil
}

func columnsKey(cols []int32) string {
	if len(cols) == 0 {
		return ""
	}
	b := make([]byte, 0, 4*len(cols))
	for _, c := range cols {
		b = fmt.Appendf(b, "%d,", c)
	}
	return string(b)
}
