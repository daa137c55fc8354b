package transport

import (
	"crypto/tls"
	"net"
	"sync"
)

// crypto/tls seals a write into records of at most 16 KiB of plaintext and
// hands each record to the socket with its own write call. A 500-key
// lookup answer (half a megabyte) thus became 32 system calls where the
// plaintext port made a handful, and on loopback each one wakes the reader
// for a record it cannot use alone: a third of the cost TLS added to
// `floe bench lookup --batch 500`. A recordBatcher sits under the tls.Conn
// and gathers the records of one Write into writes of up to
// recordBatchBytes.

// recordBatchBytes is how many bytes of sealed records a batcher gathers
// before writing them: four full records.
const recordBatchBytes = 4 * (16<<10 + 256)

// batchBuffers holds the batchers' buffers between writes, so an idle
// connection holds none.
var batchBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, recordBatchBytes)
	return &b
}}

// recordBatcher is the connection under a tls.Conn. Outside a batch its
// writes go straight to the socket (handshake flights, alerts, key updates
// the reading side sends); within one (begin … end, around a tls.Conn
// Write) they are gathered.
type recordBatcher struct {
	net.Conn

	mu       sync.Mutex // orders gathered records and direct writes
	batching bool
	buf      *[]byte // while batching; nil outside a batch
	err      error   // the first failed write of the batch
}

// Write gathers p while a batch is open, writing the gathered bytes when
// they reach recordBatchBytes; otherwise it writes p.
func (c *recordBatcher) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.batching {
		return c.Conn.Write(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	if len(*c.buf)+len(p) > recordBatchBytes {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) >= recordBatchBytes {
			return c.writeLocked(p)
		}
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// begin opens a batch.
func (c *recordBatcher) begin() {
	c.mu.Lock()
	c.batching = true
	c.buf = batchBuffers.Get().(*[]byte)
	c.mu.Unlock()
}

// end writes what the batch gathered, closes it, and returns the first
// error of its writes.
func (c *recordBatcher) end() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.flushLocked()
	*c.buf = (*c.buf)[:0]
	batchBuffers.Put(c.buf)
	c.buf, c.batching, c.err = nil, false, nil
	return err
}

func (c *recordBatcher) flushLocked() error {
	if c.err == nil && len(*c.buf) > 0 {
		_, c.err = c.writeLocked(*c.buf)
	}
	*c.buf = (*c.buf)[:0]
	return c.err
}

func (c *recordBatcher) writeLocked(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// batchedTLS is a tls.Conn whose Writes go to the socket in batches of
// records. Its Writes are serialized (tls.Conn's are too), so a Write
// returns once its bytes are with the socket.
type batchedTLS struct {
	*tls.Conn
	batcher *recordBatcher
	wmu     sync.Mutex
}

// newBatchedTLS returns a tls.Conn over raw, made by wrap (tls.Client or
// tls.Server), with its records batched.
func newBatchedTLS(raw net.Conn, wrap func(net.Conn) *tls.Conn) *batchedTLS {
	b := &recordBatcher{Conn: raw}
	return &batchedTLS{Conn: wrap(b), batcher: b}
}

func (c *batchedTLS) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.batcher.begin()
	n, err := c.Conn.Write(p)
	if ferr := c.batcher.end(); ferr != nil && err == nil {
		// the records were sealed, but not all of them reached the
		// socket: the connection is broken, say none did
		return 0, ferr
	}
	return n, err
}
