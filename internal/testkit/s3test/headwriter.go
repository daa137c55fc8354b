package s3test

import "bytes"

// headWriter keeps the first max bytes written to it (a process's start-up
// complaints) and drops the rest. It is not safe for concurrent use: the
// process writes it, and it is read once the process has exited.
type headWriter struct {
	buf bytes.Buffer
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *headWriter) String() string { return w.buf.String() }
