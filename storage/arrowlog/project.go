package arrowlog

import (
	"fmt"

	"github.com/floedb/floe/storage/record"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Project appends to dst the payload of the columns of s at the given
// indexes (in that order, without duplicates) out of payload, a payload of
// s, and returns it: a payload of SubSchema(s, columns). It cuts at the
// buffer level without decompressing anything: the selected columns'
// field nodes and buffers (still compressed) are copied and new metadata
// written with the same compression. It checks the payload's structure as
// far as it reads it (metadata, buffer bounds, counts) but not its values:
// it is meant for payloads validated when they were produced.
func Project(s record.Schema, payload []byte, columns []int, dst []byte) ([]byte, error) {
	if err := checkProjection(len(s.Columns), columns); err != nil {
		return dst, err
	}
	l, err := newLayout(s)
	if err != nil {
		return dst, err
	}
	var in batchMeta
	body, err := parseMessage(payload, &in)
	if err != nil {
		return dst, err
	}
	if len(in.nodes) != l.nodes || len(in.buffers) != l.buffers {
		return dst, invalidf("%d field nodes and %d buffers, the schema's %d columns take %d and %d",
			len(in.nodes), len(in.buffers), len(s.Columns), l.nodes, l.buffers)
	}
	out := batchMeta{length: in.length, compressed: in.compressed, codec: in.codec}
	var outBody []byte
	for _, c := range columns {
		cl := l.columns[c]
		out.nodes = append(out.nodes, in.nodes[cl.firstNode:cl.firstNode+cl.nodes]...)
		for _, ref := range in.buffers[cl.firstBuffer : cl.firstBuffer+cl.buffers] {
			start := len(outBody)
			outBody = append(outBody, body[ref.offset:ref.offset+ref.length]...)
			out.buffers = append(out.buffers, bufferRef{offset: int64(start), length: ref.length})
			outBody = padBody(outBody)
		}
	}
	return appendMessage(dst, flatbuffers.NewBuilder(256), &out, outBody), nil
}

// checkProjection checks the indexes of a projection of a schema of n
// columns.
func checkProjection(n int, columns []int) error {
	if len(columns) == 0 {
		return fmt.Errorf("%w: no columns", ErrBadProjection)
	}
	seen := make([]bool, n)
	for _, c := range columns {
		switch {
		case c < 0 || c >= n:
			return fmt.Errorf("%w: column index %d out of range for %d columns", ErrBadProjection, c, n)
		case seen[c]:
			return fmt.Errorf("%w: column index %d given twice", ErrBadProjection, c)
		}
		seen[c] = true
	}
	return nil
}
