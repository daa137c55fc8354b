package tiering

import (
	"fmt"
	"io"
)

// exactReader reads the size bytes Put was promised: it stops after them,
// and fails with io.ErrUnexpectedEOF if its source ends sooner, so a short
// reader fails the Put instead of storing a shorter object. Both backends
// read through it; for S3 it also hides the source's ReaderAt and Seeker,
// so minio-go buffers one part at a time (PartSize bytes) rather than
// holding parts for parallel uploads.
type exactReader struct {
	r    io.Reader
	size int64
	left int64
}

func newExactReader(r io.Reader, size int64) *exactReader {
	return &exactReader{r: r, size: size, left: size}
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = fmt.Errorf("reader ended after %d of %d bytes: %w", e.size-e.left, e.size, io.ErrUnexpectedEOF)
	}
	return n, err
}
