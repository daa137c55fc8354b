package gossip

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// metaVersion is the first byte of every node meta.
const metaVersion = 1

// nodeMeta is what a node tells the pool about itself besides its name (the
// node id) and gossip address. The layout is in the package doc.
type nodeMeta struct {
	ClusterID   string
	RPCAddress  string
	Incarnation string
	Roles       []string
	// Leaving is set by Leave just before memberlist announces the leave.
	Leaving bool
}

// metaFlagLeaving is bit 0 of the flags byte.
const metaFlagLeaving = 1

// encode returns the meta bytes, or ErrMetaTooLarge if they exceed
// memberlist's limit.
func (m nodeMeta) encode() ([]byte, error) {
	buf := make([]byte, 0, 64)
	buf = append(buf, metaVersion)
	buf = appendString(buf, m.ClusterID)
	buf = appendString(buf, m.RPCAddress)
	buf = appendString(buf, m.Incarnation)
	buf = binary.AppendUvarint(buf, uint64(len(m.Roles)))
	for _, r := range m.Roles {
		buf = appendString(buf, r)
	}
	var flags byte
	if m.Leaving {
		flags |= metaFlagLeaving
	}
	buf = append(buf, flags)
	if len(buf) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrMetaTooLarge, len(buf), memberlist.MetaMaxSize)
	}
	return buf, nil
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// decodeMeta parses meta bytes. Bytes after the known fields are ignored:
// later versions of the layout may only append fields.
func decodeMeta(buf []byte) (nodeMeta, error) {
	var m nodeMeta
	switch {
	case len(buf) == 0:
		return m, fmt.Errorf("%w: empty", ErrInvalidMeta)
	case len(buf) > memberlist.MetaMaxSize:
		return m, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidMeta, len(buf), memberlist.MetaMaxSize)
	}
	if buf[0] != metaVersion {
		return m, fmt.Errorf("%w: version %d, want %d", ErrInvalidMeta, buf[0], metaVersion)
	}
	d := metaDecoder{buf: buf[1:]}
	m.ClusterID = d.string()
	m.RPCAddress = d.string()
	m.Incarnation = d.string()
	n := d.uvarint()
	// Every role takes at least one byte (its length), which bounds n by
	// what is left before anything is allocated.
	if d.err == nil && n > uint64(len(d.buf)) {
		d.err = fmt.Errorf("%w: %d roles in %d bytes", ErrInvalidMeta, n, len(d.buf))
	}
	if d.err == nil && n > 0 {
		m.Roles = make([]string, 0, n)
		for range n {
			m.Roles = append(m.Roles, d.string())
		}
	}
	flags := d.byte()
	if d.err != nil {
		return nodeMeta{}, d.err
	}
	m.Leaving = flags&metaFlagLeaving != 0
	return m, nil
}

// metaDecoder reads fields until the first error, which it keeps.
type metaDecoder struct {
	buf []byte
	err error
}

func (d *metaDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad length", ErrInvalidMeta)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *metaDecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) == 0 {
		d.err = fmt.Errorf("%w: missing flags", ErrInvalidMeta)
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *metaDecoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.buf)) {
		d.err = fmt.Errorf("%w: field of %d bytes, %d left", ErrInvalidMeta, n, len(d.buf))
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}
