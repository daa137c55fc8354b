package kvstore

// Buffer is a leader's pre-write buffer: for every key written by changelog
// records that are in the log but not yet applied to the Store, the row
// they leave (nil Data for a delete) with its schema version, and the
// offset that covers it. The leader
// merges against it before the Store, so a write sees every earlier write
// whether or not it has committed yet.
//
// Buffer is not safe for concurrent use.
type Buffer struct {
	rows  map[string]bufferedRow
	queue []bufferedKey // in offset order
	bytes int64         // of every queued Put, replaced ones included
}

type bufferedRow struct {
	row    Row // nil Data: deleted
	offset int64
}

type bufferedKey struct {
	key    string
	offset int64
	bytes  int64
}

// bufferedOverhead approximates the map and queue bookkeeping of one Put.
const bufferedOverhead = 96

// NewBuffer returns an empty buffer.
func NewBuffer() *Buffer { return &Buffer{rows: map[string]bufferedRow{}} }

// Get returns the buffered state of key: ok false when the buffer knows
// nothing of it (read the Store), else the row, nil Data when deleted.
func (b *Buffer) Get(key []byte) (row Row, ok bool) {
	e, ok := b.rows[string(key)]
	return e.row, ok
}

// Put records that the changelog up to and including offset leaves row
// (nil Data: absent) under key. Offsets must not decrease from one Put to the
// next. Put keeps row: the caller must not change it afterwards.
func (b *Buffer) Put(key []byte, row Row, offset int64) {
	k := string(key)
	n := int64(len(key)+len(row.Data)) + bufferedOverhead
	b.rows[k] = bufferedRow{row: row, offset: offset}
	b.queue = append(b.queue, bufferedKey{key: k, offset: offset, bytes: n})
	b.bytes += n
}

// Evict forgets what the Store now holds: the entries whose offset is below
// appliedOffset, unless a later Put replaced them.
func (b *Buffer) Evict(appliedOffset int64) {
	n := 0
	for n < len(b.queue) && b.queue[n].offset < appliedOffset {
		q := b.queue[n]
		if e, ok := b.rows[q.key]; ok && e.offset == q.offset {
			delete(b.rows, q.key)
		}
		b.bytes -= q.bytes
		n++
	}
	if n == 0 {
		return
	}
	b.queue = append(b.queue[:0], b.queue[n:]...)
	if cap(b.queue) > 1024 && len(b.queue) < cap(b.queue)/4 {
		b.queue = append(make([]bufferedKey, 0, 2*len(b.queue)), b.queue...)
	}
}

// Len is the number of buffered keys.
func (b *Buffer) Len() int { return len(b.rows) }

// Bytes approximates the memory the buffer holds: keys, rows and
// bookkeeping of every Put not yet evicted.
func (b *Buffer) Bytes() int64 { return b.bytes }

// Reset empties the buffer.
func (b *Buffer) Reset() {
	clear(b.rows)
	b.queue = b.queue[:0]
	b.bytes = 0
}
