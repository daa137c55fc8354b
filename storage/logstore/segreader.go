package logstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/floedb/floe/storage/record"
)

// Where a segment's valid data ends, and why. A segment file is batches
// end to end, then (the active segment) space allocated ahead and never
// written, which reads as zeros. Recovery keeps the batches before the end
// and cuts the rest; the read-only tools (floe log dump, log verify) report
// it. The rule lives here once: headEnd and batchEnd.

// TailReason says why a segment's valid data ends where it does.
type TailReason uint8

const (
	// TailZero: zeros, space allocated ahead and never written; the
	// expected end of an active segment.
	TailZero TailReason = iota + 1
	// TailTorn: bytes that are not a whole batch: a batch cut short (a
	// write the crash interrupted), an impossible length, a broken header.
	TailTorn
	// TailBadCRC: a whole batch whose checksum does not match its bytes.
	TailBadCRC
)

func (r TailReason) String() string {
	switch r {
	case TailZero:
		return "zero tail"
	case TailTorn:
		return "torn batch"
	case TailBadCRC:
		return "bad CRC"
	}
	return fmt.Sprintf("TailReason(%d)", uint8(r))
}

// TailError is the end of a segment's valid data: where it is (a byte
// position in the segment file), why, and what was found there.
type TailError struct {
	Position int64
	Reason   TailReason
	// Detail says what was found, and where, for a person.
	Detail string
}

func (e *TailError) Error() string { return "logstore: " + e.Reason.String() + ": " + e.Detail }

// headEnd applies the end rule to the first bytes at a batch position
// (up to record.HeaderSize; fewer where the data ends): a header whose
// first 12 bytes (base offset and length) are zero, or one cut off by the
// end of the data, is the end. Bytes that are all zero are a zero tail,
// anything else a torn batch. Otherwise it returns the batch's size.
func headEnd(head []byte, pos int64) (int, *TailError) {
	if len(head) < record.HeaderSize || !slices.ContainsFunc(head[:12], nonZero) {
		if !slices.ContainsFunc(head, nonZero) {
			return 0, &TailError{Position: pos, Reason: TailZero, Detail: fmt.Sprintf("unwritten space at byte %d", pos)}
		}
		return 0, &TailError{Position: pos, Reason: TailTorn, Detail: fmt.Sprintf("%d stray bytes at byte %d", len(head), pos)}
	}
	size, ok := record.PeekSize(head)
	if !ok {
		return 0, &TailError{Position: pos, Reason: TailTorn, Detail: fmt.Sprintf("impossible batch length at byte %d", pos)}
	}
	return size, nil
}

// batchEnd applies the end rule to a whole batch of size bytes, of which
// data holds what there is: fewer bytes is a batch cut short, a broken
// header a torn batch, a checksum that does not hold a bad CRC (the batch
// is returned with it, its header valid).
func batchEnd(data []byte, size int, pos int64) (record.Batch, *TailError) {
	if len(data) < size {
		return nil, &TailError{Position: pos, Reason: TailTorn, Detail: fmt.Sprintf("batch at byte %d cut short", pos)}
	}
	b, err := record.CheckHeader(data[:size])
	if err != nil {
		return nil, &TailError{Position: pos, Reason: TailTorn, Detail: fmt.Sprintf("byte %d: %v", pos, err)}
	}
	if _, err := record.Check(b); err != nil {
		return b, &TailError{Position: pos, Reason: TailBadCRC, Detail: fmt.Sprintf("bad CRC in batch at offset %d (byte %d)", b.BaseOffset(), pos)}
	}
	return b, nil
}

// checkBatchAt is the batch at the start of data, position pos of its
// segment, or where the valid data ends.
func checkBatchAt(data []byte, pos int64) (record.Batch, *TailError) {
	size, end := headEnd(data[:min(len(data), record.HeaderSize)], pos)
	if end != nil {
		return nil, end
	}
	return batchEnd(data, size, pos)
}

func nonZero(c byte) bool { return c != 0 }

// SegmentReader reads the batches of one segment file in order, streaming
// it, read-only: for tools that inspect a folder another process may own.
// It applies recovery's end rule: Next returns the batches before the end
// and then a *TailError saying where the valid data ends and why, or
// io.EOF when the file ends after a whole batch.
type SegmentReader struct {
	r   *bufio.Reader
	pos int64
	buf []byte
	end error // once set, every Next returns it
}

// segmentReadBytes is a SegmentReader's buffer.
const segmentReadBytes = 1 << 20

// NewSegmentReader reads the segment file whose bytes r gives, from its
// start.
func NewSegmentReader(r io.Reader) *SegmentReader {
	return &SegmentReader{r: bufio.NewReaderSize(r, segmentReadBytes)}
}

// Next returns the next batch and its byte position in the file, valid
// until the next call. At the end it returns a *TailError or io.EOF, or
// the file's read error. A batch with a bad CRC comes with a *TailError
// of TailBadCRC: the valid data ends there, and a tool may call Next again
// to read on past it (its header held, so the next batch's position is
// known).
func (s *SegmentReader) Next() (record.Batch, int64, error) {
	if s.end != nil {
		return nil, s.pos, s.end
	}
	pos := s.pos
	head, err := s.r.Peek(record.HeaderSize)
	if len(head) == 0 && errors.Is(err, io.EOF) {
		s.end = io.EOF
		return nil, pos, s.end
	}
	if err != nil && !errors.Is(err, io.EOF) {
		s.end = err
		return nil, pos, err
	}
	size, end := headEnd(head, pos)
	if end != nil {
		s.end = end
		return nil, pos, end
	}
	s.buf = slices.Grow(s.buf[:0], size)[:size]
	n, err := io.ReadFull(s.r, s.buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		s.end = err
		return nil, pos, err
	}
	b, end := batchEnd(s.buf[:n], size, pos)
	s.pos += int64(n)
	if end != nil && end.Reason != TailBadCRC {
		s.end = end
	}
	if end != nil {
		return b, pos, end
	}
	return b, pos, nil
}
