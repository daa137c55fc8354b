package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// maxLineBytes bounds one JSON line.
const maxLineBytes = 64 << 20

// lineReader reads lines of any length up to maxLineBytes and counts them.
type lineReader struct {
	r    *bufio.Reader
	line int    // number of the line last returned, from 1
	buf  []byte // a line that spanned several reads
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending, valid until the next
// call, or io.EOF after the last one. A last line without a newline counts.
func (l *lineReader) next() ([]byte, error) {
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
			if len(l.buf) > maxLineBytes {
				return nil, fmt.Errorf("line %d: longer than %d bytes", l.line+1, maxLineBytes)
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

// lineStats counts what produceLines accepted.
type lineStats struct {
	rows  int64
	bytes int64 // of the accepted lines
}

// produceLines hands every non-blank line of r, one JSON object each, to
// appendJSON. It stops at the first line appendJSON refuses, with an error
// "line N: <its error>"; the lines before it stay accepted.
func produceLines(ctx context.Context, r io.Reader, appendJSON func(ctx context.Context, object []byte) error) (lineStats, error) {
	var st lineStats
	lr := newLineReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		if lr.line == 1 {
			// A UTF-8 byte order mark, as some editors write, is not JSON.
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := appendJSON(ctx, line); err != nil {
			return st, fmt.Errorf("line %d: %w", lr.line, err)
		}
		st.rows++
		st.bytes += int64(len(line))
	}
}

// readerFunc is an io.Reader made of a function.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// interruptible returns a reader of r whose reads return when ctx ends,
// abandoning the read in progress: a read of stdin cannot be interrupted
// otherwise. Once ctx has ended the reader is not to be used again.
func interruptible(ctx context.Context, r io.Reader) io.Reader {
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
