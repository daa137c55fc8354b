package dataio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one JSON line.
const MaxLineBytes = 64 << 20

// LineReader reads lines of any length up to MaxLineBytes and counts them.
type LineReader struct {
	r    *bufio.Reader
	line int    // number of the line last returned, from 1
	buf  []byte // a line that spanned several reads
}

func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Line is the number of the line Next last returned, from 1.
func (l *LineReader) Line() int { return l.line }

// Next returns the next line without its line ending, valid until the next
// call, or io.EOF after the last one. A last line without a newline counts.
func (l *LineReader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		switch {
		case err == nil:
			l.line++
			if len(l.buf) == 0 {
				return trimEOL(chunk), nil
			}
			l.buf = append(l.buf, chunk...)
			return trimEOL(l.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			l.buf = append(l.buf, chunk...)
			if len(l.buf) > MaxLineBytes {
				return nil, fmt.Errorf("line %d: longer than %d bytes", l.line+1, MaxLineBytes)
			}
		case errors.Is(err, io.EOF):
			l.buf = append(l.buf, chunk...)
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			l.line++
			return trimEOL(l.buf), nil
		default:
			return nil, fmt.Errorf("after line %d: %w", l.line, err)
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// LineStats counts what EachLine accepted.
type LineStats struct {
	Rows  int64
	Bytes int64 // of the accepted lines
}

// EachLine hands every non-blank line of r, one JSON object each, to
// appendJSON. It stops at the first line appendJSON refuses, with an error
// "line N: <its error>"; the lines before it stay accepted.
func EachLine(ctx context.Context, r io.Reader, appendJSON func(ctx context.Context, object []byte) error) (LineStats, error) {
	var st LineStats
	lr := NewLineReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		line, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		if lr.Line() == 1 {
			// A UTF-8 byte order mark, as some editors write, is not JSON.
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := appendJSON(ctx, line); err != nil {
			return st, fmt.Errorf("line %d: %w", lr.Line(), err)
		}
		st.Rows++
		st.Bytes += int64(len(line))
	}
}

// readerFunc is an io.Reader made of a function.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// Interruptible returns a reader of r whose reads return when ctx ends,
// abandoning the read in progress: a read of stdin cannot be interrupted
// otherwise. Once ctx has ended the reader is not to be used again.
func Interruptible(ctx context.Context, r io.Reader) io.Reader {
	var buf []byte
	return readerFunc(func(p []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if len(buf) < len(p) {
			buf = make([]byte, len(p))
		}
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		b := buf[:len(p)]
		go func() {
			n, err := r.Read(b)
			done <- result{n, err}
		}()
		select {
		case res := <-done:
			return copy(p, b[:res.n]), res.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
}
