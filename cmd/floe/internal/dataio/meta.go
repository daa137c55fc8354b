package dataio

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/floedb/floe/storage/record"
)

// ErrBadChange refuses a _change field an import cannot apply.
var ErrBadChange = errors.New("bad _change")

// Change is what a line of an import does, from its _change field
// (floe consume and floe table export add it to a primary-key table's
// changelog): +A, +I and +U write the row, -D deletes its key, -U (the old
// row of an update, followed by its new row) does nothing.
type Change uint8

const (
	ChangeWrite Change = iota // no _change, +A, +I, +U
	ChangeDelete
	ChangeSkip
)

// MetaSplitter takes the members floe consume adds to a row (_bucket,
// _offset, _timestamp, _change; column names never start with _) out of
// JSON objects, reusing one buffer.
type MetaSplitter struct {
	buf []byte
	// Stated: the last object split had a _change member (its change is
	// then what the line says, not the default).
	Stated bool
}

// Split returns object without its meta members, and what its _change
// says. Other members are kept byte for byte, so the row's codec sees them
// as written. An object the scan cannot follow (malformed JSON) is returned
// as it is, for the codec to report. The result is valid until the next
// call.
func (s *MetaSplitter) Split(object []byte) ([]byte, Change, error) {
	s.Stated = false
	if !bytes.Contains(object, []byte(`"_`)) {
		return object, ChangeWrite, nil // the usual line: nothing to take out
	}
	var m metaScan
	out, ok, err := m.split(s.buf[:0], object)
	if err != nil || !ok {
		return object, ChangeWrite, err
	}
	s.buf, s.Stated = out, m.seen
	return out, m.change, nil
}

// metaScan walks the members of one JSON object.
type metaScan struct {
	b      []byte
	i      int
	change Change
	seen   bool // a _change member was met
}

// split copies the members of m.b that are not meta fields to dst; ok is
// false when the text is not an object it can follow.
func (m *metaScan) split(dst, object []byte) (out []byte, ok bool, err error) {
	m.b, m.i = object, 0
	m.space()
	if !m.eat('{') {
		return nil, false, nil
	}
	out = append(dst, '{')
	kept := 0
	for {
		m.space()
		if m.eat('}') {
			break
		}
		start := m.i
		if !m.skipString() {
			return nil, false, nil
		}
		key := m.b[start+1 : m.i-1]
		m.space()
		if !m.eat(':') {
			return nil, false, nil
		}
		m.space()
		valueStart := m.i
		if !m.skipValue() {
			return nil, false, nil
		}
		switch string(key) {
		case "_bucket", "_offset", "_timestamp":
		case "_change":
			if err := m.setChange(m.b[valueStart:m.i]); err != nil {
				return nil, false, err
			}
		default:
			if kept++; kept > 1 {
				out = append(out, ',')
			}
			out = append(out, m.b[start:m.i]...)
		}
		m.space()
		if m.eat(',') {
			continue
		}
		if m.eat('}') {
			break
		}
		return nil, false, nil
	}
	m.space()
	if m.i != len(m.b) {
		return nil, false, nil // data after the object
	}
	return append(out, '}'), true, nil
}

// setChange reads the value of _change.
func (m *metaScan) setChange(value []byte) error {
	if m.seen {
		return fmt.Errorf("%w: given twice", ErrBadChange)
	}
	m.seen = true
	switch string(value) {
	case `"+A"`, `"+I"`, `"+U"`:
		m.change = ChangeWrite
	case `"-D"`:
		m.change = ChangeDelete
	case `"-U"`:
		m.change = ChangeSkip
	default:
		return fmt.Errorf("%w: %s: want %q, %q, %q, %q or %q", ErrBadChange, value,
			record.AppendOnly, record.Insert, record.UpdateBefore, record.UpdateAfter, record.Delete)
	}
	return nil
}

func (m *metaScan) space() {
	for m.i < len(m.b) {
		switch m.b[m.i] {
		case ' ', '\t', '\r', '\n':
			m.i++
		default:
			return
		}
	}
}

// eat consumes c when it is next.
func (m *metaScan) eat(c byte) bool {
	if m.i < len(m.b) && m.b[m.i] == c {
		m.i++
		return true
	}
	return false
}

// skipString passes a string, quotes included.
func (m *metaScan) skipString() bool {
	if !m.eat('"') {
		return false
	}
	for m.i < len(m.b) {
		switch m.b[m.i] {
		case '\\':
			m.i += 2
		case '"':
			m.i++
			return true
		default:
			m.i++
		}
	}
	return false
}

// skipValue passes one value: a string, an object or array (whatever they
// hold), or a literal (number, true, false, null), which the codec checks.
func (m *metaScan) skipValue() bool {
	if m.i >= len(m.b) {
		return false
	}
	switch m.b[m.i] {
	case '"':
		return m.skipString()
	case '{', '[':
		depth := 0
		for m.i < len(m.b) {
			switch m.b[m.i] {
			case '"':
				if !m.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					m.i++
					return true
				}
			}
			m.i++
		}
		return false
	}
	start := m.i
	for m.i < len(m.b) {
		switch m.b[m.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return m.i > start
		}
		m.i++
	}
	return false
}
