package client

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// DefaultRowScanTimeout bounds one RowScanner.Next, retries included, in the
// zero RowScannerOptions.
const DefaultRowScanTimeout = 30 * time.Second

// RowScannerOptions configure a RowScanner. The zero value is usable.
type RowScannerOptions struct {
	// PageRows bounds the rows of one page. Default (0) and at most: the
	// server's limit, 10,000.
	PageRows int
	// PageBytes bounds the row bytes of one page, though a page holds at
	// least one row. Default (0) and at most: the server's limit, 4 MiB.
	PageBytes int
	// RequestTimeout bounds one call to a server. Default 10 s.
	RequestTimeout time.Duration
	// Timeout bounds one Next, retries included: retriable errors (a leader
	// moved, a node unreachable) are retried with fresh metadata until it
	// passes or the caller's context ends. Default 30 s.
	Timeout time.Duration
	// Logger receives the scanner's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (o *RowScannerOptions) Validate() error {
	switch {
	case o.PageRows < 0 || o.PageBytes < 0:
		return pkgerr.Errorf("client", "row scanner: negative PageRows or PageBytes")
	case o.RequestTimeout < 0 || o.Timeout < 0:
		return pkgerr.Errorf("client", "row scanner: negative RequestTimeout or Timeout")
	}
	return nil
}

func (o RowScannerOptions) withDefaults() RowScannerOptions {
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultRowScanTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// RowScanner reads every row of one bucket of a primary-key table from the
// bucket's leader, a page at a time (the ScanRows call), in store-key order:
// primary-key byte order, after the bucket key when that is a strict prefix
// of the primary key.
//
// Each page is read from one consistent view of the leader's store, taken
// once the store holds every write committed before the call, as a lookup
// is. The pages of a scan are views of their own, so a scan that runs while
// the bucket is written is not a point-in-time snapshot: every key comes at
// most once, in order, as the page that read it saw it, and a key written
// meanwhile behind the scan's position does not come. A scan of a bucket no
// one writes meanwhile is its current rows exactly.
//
// A page that fails with a retriable error is asked for again, from the new
// leader after fresh metadata and a backoff; the scan resumes where it was,
// as every replica keeps the same keys. A RowScanner is meant for one
// goroutine.
type RowScanner struct {
	t      *Table
	bucket int32
	opts   RowScannerOptions
	after  []byte // the store key of the last row returned
	done   bool
	offset int64 // applied offset of the last page
}

// NewRowScanner returns a scanner of one bucket's rows, at its first row. It
// does no I/O. A log table is refused with ErrNotPrimaryKeyTable.
func (t *Table) NewRowScanner(bucket int32, opts RowScannerOptions) (*RowScanner, error) {
	if _, err := t.requireKeys(); err != nil {
		return nil, err
	}
	if err := t.checkBucket(bucket); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &RowScanner{t: t, bucket: bucket, opts: opts.withDefaults()}, nil
}

// Next returns the next page of rows, rows of the table's schema the caller
// owns, and io.EOF once every row was returned. A page may be empty only
// when it is the last.
func (s *RowScanner) Next(ctx context.Context) ([][]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req := &pb.ScanRowsRequest{TableId: s.t.info.ID, Bucket: s.bucket, AfterKey: s.after,
		MaxRows: int32(min(s.opts.PageRows, 1<<30)), MaxBytes: int32(min(s.opts.PageBytes, 1<<30))}
	var resp *pb.ScanRowsResponse
	err := s.t.callLeader(ctx, s.bucket, s.opts.RequestTimeout, s.opts.Logger,
		func(ctx context.Context, tablet pb.DRPCTabletClient) error {
			var err error
			resp, err = tablet.ScanRows(ctx, req)
			return err
		})
	if err != nil {
		return nil, pkgerr.Errorf("client", "scan rows of %s bucket %d: %w", s.t.qualifiedName(), s.bucket, err)
	}
	rows, err := s.unpack(ctx, resp)
	if err != nil {
		return nil, pkgerr.Errorf("client", "scan rows of %s bucket %d: %w", s.t.qualifiedName(), s.bucket, err)
	}
	s.done, s.offset = resp.Done, resp.AppliedOffset
	if len(rows) > 0 {
		s.after = resp.NextKey
	}
	if len(rows) == 0 && s.done {
		return nil, io.EOF
	}
	return rows, nil
}

// unpack checks a page and splits its rows.
func (s *RowScanner) unpack(ctx context.Context, resp *pb.ScanRowsResponse) ([][]byte, error) {
	if len(resp.RowSizes) == 0 && !resp.Done {
		return nil, fmt.Errorf("an empty page that is not the last")
	}
	if len(resp.RowSizes) > 0 && len(resp.NextKey) == 0 {
		return nil, fmt.Errorf("a page of %d rows without the key to resume after", len(resp.RowSizes))
	}
	rows := make([][]byte, len(resp.RowSizes))
	off := 0
	for i, n := range resp.RowSizes {
		if n == 0 || int(n) > len(resp.Rows)-off {
			return nil, fmt.Errorf("row %d of %d bytes in a page of %d bytes at %d", i, n, len(resp.Rows), off)
		}
		row := resp.Rows[off : off+int(n) : off+int(n)]
		off += int(n)
		row, err := s.t.readRow(ctx, resp.SchemaId, row)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		rows[i] = row
	}
	if off != len(resp.Rows) {
		return nil, fmt.Errorf("%d bytes of rows, row sizes add up to %d", len(resp.Rows), off)
	}
	return rows, nil
}

// AppliedOffset is the log offset the last page's view covered: its rows
// were the bucket's state just below it. 0 before the first page.
func (s *RowScanner) AppliedOffset() int64 { return s.offset }
