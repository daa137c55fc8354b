package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// fetchCall is one Fetch to one node, running in its own goroutine.
type fetchCall struct {
	addr    string
	version uint64 // of the metadata that named the leader
	asked   map[subKey]fetchedFrom
	cancel  context.CancelFunc

	// Set by the goroutine before the call is handed back.
	resp *pb.FetchResponse
	err  error
}

// fetchedFrom is what a fetch asked of one bucket.
type fetchedFrom struct {
	gen    uint64
	offset int64
}

// issue starts a fetch to every leader node of the buckets that are ready:
// resolved, not in a fetch, not backing off.
func (s *LogScanner) issue() { s.issueAt(nil) }

// issueAt is issue; with at, only of those buckets, from those offsets
// (a read-ahead: where decoding their last answer will leave them).
func (s *LogScanner) issueAt(at map[subKey]int64) {
	now := time.Now()
	calls := make(map[string]*fetchCall)
	reqs := make(map[string]*pb.FetchRequest)
	for key, sub := range s.subs {
		if !sub.resolved || sub.inflight || sub.retryAt.After(now) {
			continue
		}
		offset := sub.position
		if at != nil {
			var ok bool
			if offset, ok = at[key]; !ok {
				continue
			}
		}
		addr, version, err := sub.t.leader(key.bucket)
		if err != nil {
			s.retryLater(sub, version, err)
			continue
		}
		call := calls[addr]
		if call == nil {
			call = &fetchCall{addr: addr, version: version, asked: make(map[subKey]fetchedFrom)}
			calls[addr] = call
			reqs[addr] = &pb.FetchRequest{ReplicaId: 0, MaxWaitMs: int32(s.opts.MaxWait.Milliseconds()),
				MinBytes: 1, MaxBytes: int32(min(s.opts.MaxBytes, 1<<30))}
		}
		call.asked[key] = fetchedFrom{gen: sub.gen, offset: offset}
		reqs[addr].Buckets = append(reqs[addr].Buckets, &pb.FetchBucket{TableId: key.id, Bucket: key.bucket,
			Offset: offset, LeaderEpoch: -1, LastFetchedEpoch: -1, RemoteRefs: !s.noRemoteRefs.Load(),
			Columns: s.proj.indexes()})
		sub.inflight = true
	}
	for addr, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.MaxWait+fetchSlack)
		call.cancel = cancel
		s.inflight[call] = struct{}{}
		req := reqs[addr]
		s.wg.Go(func() { s.fetch(ctx, call, req) })
	}
}

// fetch runs one call and hands it back to Poll.
func (s *LogScanner) fetch(ctx context.Context, call *fetchCall, req *pb.FetchRequest) {
	defer call.cancel()
	call.resp, call.err = s.t.tablet(call.addr).Fetch(ctx, req)
	if call.err == nil {
		s.readRemoteRefs(ctx, call)
	}
	s.mu.Lock()
	s.completed = append(s.completed, call)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// readRemoteRefs reads the remote segments the leader pointed at into the
// buckets' records, as if the leader had sent them. A failed read is a
// retriable error of that bucket, and later fetches ask the leader to read
// remote segments itself (object storage may be out of the client's
// reach).
func (s *LogScanner) readRemoteRefs(ctx context.Context, call *fetchCall) {
	for _, fb := range call.resp.GetBuckets() {
		ref := fb.GetRemote()
		asked, ok := call.asked[subKey{id: fb.TableId, bucket: fb.Bucket}]
		if ref == nil || fb.Error != "" || !ok {
			continue
		}
		data, err := readRemote(ctx, s.t.c.httpClient(), ref, asked.offset, s.opts.MaxBytes)
		if err != nil {
			s.opts.Logger.Warn("reading a remote segment directly failed; asking the leader to read it", "bucket", fb.Bucket, "err", err)
			s.noRemoteRefs.Store(true)
			fb.ErrorCode, fb.Error = pb.ErrorCode_ERROR_CODE_UNAVAILABLE, err.Error()
			continue
		}
		fb.Records, fb.Remote = data, nil
	}
}

// collect takes the fetches that completed and appends their records to
// out. It returns the first fatal error met; buckets with retriable errors
// back off and are fetched again.
func (s *LogScanner) collect(ctx context.Context, out []ScanRecord) ([]ScanRecord, error) {
	s.mu.Lock()
	done := s.completed
	s.completed = nil
	s.mu.Unlock()
	var firstErr error
	var answers []answer
	var ahead map[subKey]int64 // read-aheads
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, call := range done {
		delete(s.inflight, call)
		// current returns the subscription the call fetched for, unless it
		// was replaced or dropped since.
		current := func(key subKey) *subscription {
			asked, ok := call.asked[key]
			sub := s.subs[key]
			if !ok || sub == nil || sub.gen != asked.gen || sub.position != asked.offset {
				return nil
			}
			return sub
		}
		for key, asked := range call.asked {
			// The call is over for its subscription, even one that read
			// ahead from an offset decoding did not reach (then its answer
			// is dropped, and the bucket fetched again from its position).
			if sub := s.subs[key]; sub != nil && sub.gen == asked.gen {
				sub.inflight = false
			}
		}
		if call.err != nil {
			for key := range call.asked {
				sub := current(key)
				if sub == nil {
					continue
				}
				if retriable(call.err) || errors.Is(call.err, context.DeadlineExceeded) {
					s.retryLater(sub, call.version, call.err)
				} else {
					keep(pkgerr.Errorf("client", "fetch %s bucket %d from %s: %w", sub.t.qualifiedName(), key.bucket, call.addr, call.err))
				}
			}
			continue
		}
		for _, fb := range call.resp.GetBuckets() {
			sub := current(subKey{id: fb.TableId, bucket: fb.Bucket})
			if sub == nil {
				continue
			}
			if fb.Error != "" {
				err := &transport.Error{Code: fb.ErrorCode, Message: fb.Error}
				switch {
				case err.Retriable():
					s.retryLater(sub, call.version, err)
				case sub.t.part != nil && errors.Is(err, transport.ErrUnknownTable):
					keep(s.partitionDropped(sub, err))
				default:
					keep(pkgerr.Errorf("client", "fetch %s bucket %d at offset %d from %s: %w", sub.t.qualifiedName(), fb.Bucket, sub.position, call.addr, err))
				}
				continue
			}
			sub.failures = 0
			sub.hw = fb.HighWatermark
			s.stats.Bytes += int64(len(fb.Records))
			answers = append(answers, answer{sub: sub, fb: fb, addr: call.addr})
			if next := nextAfter(fb.Records, sub.position, fb.HighWatermark); next > sub.position && next < fb.HighWatermark {
				if ahead == nil {
					ahead = map[subKey]int64{}
				}
				ahead[sub.key] = next
			}
		}
	}
	// The buckets with more to read are fetched again now, from where
	// their answers end, so their leaders serve the next answers while
	// these are decoded (a lake read's leader decodes Parquet for each).
	if ahead != nil {
		s.issueAt(ahead)
	}
	for _, a := range answers {
		sub, fb := a.sub, a.fb
		var err error
		before := sub.position
		out, err = s.decode(ctx, out, sub, fb.Records, fb.HighWatermark)
		if sub.position == before && sub.position < fb.HighWatermark {
			s.opts.Logger.Debug("a fetch brought nothing past the position", "table", sub.t.qualifiedName(), "bucket", fb.Bucket,
				"position", before, "high_watermark", fb.HighWatermark, "bytes", len(fb.Records))
		}
		if err != nil {
			keep(pkgerr.Errorf("client", "fetch %s bucket %d from %s: %w", sub.t.qualifiedName(), fb.Bucket, a.addr, err))
		}
	}
	return out, firstErr
}

// answer is one bucket's records of a completed fetch, to decode.
type answer struct {
	sub  *subscription
	fb   *pb.FetchedBucket
	addr string
}

// nextAfter is the position decoding data leaves a subscription at, from
// position, by the batches' headers alone: past the last whole batch,
// never past the high watermark hw. A batch decoding then refuses (it is
// damaged) leaves the subscription short of it, and a fetch issued from
// here is dropped.
func nextAfter(data []byte, position, hw int64) int64 {
	next := position
	wholeBatches(data, func(b record.Batch) { next = max(next, min(b.NextOffset(), hw)) })
	return next
}

// decode appends the records of data at or after sub's position and below
// the high watermark hw, and advances the position past them; control
// batches are passed over. Every batch's CRC is checked; a damaged batch
// stops the decoding there.
func (s *LogScanner) decode(ctx context.Context, out []ScanRecord, sub *subscription, data []byte, hw int64) ([]ScanRecord, error) {
	bucket := sub.key.bucket
	partition := ""
	if sub.t.part != nil {
		partition = sub.t.part.Name
	}
	var arena []byte // the rows' copies, in chunks (copyRow)
	// A hint, bounded by the answer's size: a header may claim any count.
	out = slices.Grow(out, min(recordsIn(data), len(data)))
	next := sub.position
	defer func() { sub.position = next }()
	it := record.NewBatchIterator(data, true)
	var scratch []byte
	for it.Next() {
		b := it.Batch()
		if b.NextOffset() <= next {
			continue
		}
		if b.PayloadFormat() == record.PayloadControl {
			// Barriers and no-op records of a primary-key table's log: no
			// table data, but their offsets are passed.
			next = max(next, min(b.NextOffset(), hw))
			continue
		}
		if b.Compression() == record.CompressionZstd && b.PayloadFormat() != record.PayloadArrow && s.codec == nil {
			codec, err := s.t.c.batchCodec()
			if err != nil {
				return out, err
			}
			s.codec = codec
		}
		ts := time.UnixMilli(b.CommitTimestamp())
		atHW := false
		err := s.batchRows(ctx, b, &scratch, func(r record.Record) error {
			if r.Offset < next {
				return nil
			}
			if r.Offset >= hw { // never past the high watermark, whatever the server sends
				atHW = true
				return errStopRows
			}
			var row []byte
			arena, row = copyRow(arena, r.Data, len(data))
			out = append(out, ScanRecord{Partition: partition, Bucket: bucket, Offset: r.Offset, Timestamp: ts, Change: r.Change,
				SchemaID: b.SchemaID(), Row: row})
			next = r.Offset + 1
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
		}
		if atHW {
			return out, nil
		}
		next = max(next, min(b.NextOffset(), hw))
	}
	if err := it.Err(); err != nil && !(errors.Is(err, record.ErrShortBatch) && it.Pos() > 0) {
		// A short batch after whole ones is a cut-off tail, fetched next
		// time; anything else is damage.
		return out, err
	}
	return out, nil
}

// arenaChunk is the smallest chunk of memory decode copies rows into.
const arenaChunk = 256 << 10

// copyRow copies row into arena and returns both. A full arena is not
// grown (that would copy the rows already handed out): a new chunk takes
// its place, at least the fetched bytes (rows compress, so an answer's rows
// fill a few) and at least arenaChunk.
func copyRow(arena, row []byte, fetched int) ([]byte, []byte) {
	if cap(arena)-len(arena) < len(row) {
		arena = make([]byte, 0, max(len(row), fetched, arenaChunk))
	}
	start := len(arena)
	arena = append(arena, row...)
	return arena, arena[start:len(arena):len(arena)]
}

// recordsIn counts the records of the whole batches of data by their
// headers, to size what decoding them appends to.
func recordsIn(data []byte) int {
	n := 0
	wholeBatches(data, func(b record.Batch) { n += int(max(b.RecordCount(), 0)) })
	return n
}

// wholeBatches calls fn with each whole batch of data, by its header
// alone (no checksum checked), up to the first cut-off or unreadable one.
func wholeBatches(data []byte, fn func(record.Batch)) {
	for len(data) >= record.HeaderSize {
		size, ok := record.PeekSize(data)
		if !ok || size > len(data) {
			return
		}
		fn(record.Batch(data[:size]))
		data = data[size:]
	}
}
