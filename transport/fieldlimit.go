package transport

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"storj.io/drpc"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// A message within MaxMessageBytes can still cost many times its size to
// decode: an empty element of a repeated bytes field is 2 bytes on the wire
// and a 24-byte slice header (plus the slice's growth) in memory, an empty
// element of a repeated message field 2 bytes and a hundred. A 16 MiB lookup
// of empty keys took seconds and half a GiB to decode, before any handler
// could count its keys. So the Server counts the elements of the repeated
// fields it is given limits for in the encoded request, with no allocation,
// and refuses one over its limit before decoding it.

// FieldLimit bounds the elements of one repeated field of the requests a
// Server receives (the top-level fields of a request or stream message).
type FieldLimit struct {
	// Field is the field's full name, like "floe.v1.LookupRequest.keys": a
	// repeated or map field of a message in the global registry.
	Field protoreflect.FullName
	// Max is the most elements the field may hold; at least 1.
	Max int
	// Setting names what raises the limit (a flag), for the refusal's
	// message; empty for a fixed limit.
	Setting string
}

// maxLimitsPerMessage bounds the limited fields of one message, so counting
// them needs no allocation.
const maxLimitsPerMessage = 4

// fieldLimits are the limits by message name, checked before decoding.
type fieldLimits map[protoreflect.FullName][]fieldLimit

type fieldLimit struct {
	number  protowire.Number
	name    protoreflect.FullName
	max     int
	setting string
}

// newFieldLimits resolves limits against the registry.
func newFieldLimits(limits []FieldLimit) (fieldLimits, error) {
	out := fieldLimits{}
	for _, l := range limits {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(l.Field)
		if err != nil {
			return nil, pkgerr.Errorf("transport", "field limit %s: %w", l.Field, err)
		}
		fd, ok := d.(protoreflect.FieldDescriptor)
		switch {
		case !ok:
			return nil, pkgerr.Errorf("transport", "field limit %s: not a field", l.Field)
		case fd.Cardinality() != protoreflect.Repeated:
			return nil, pkgerr.Errorf("transport", "field limit %s: not a repeated field", l.Field)
		case fd.IsPacked():
			return nil, pkgerr.Errorf("transport", "field limit %s: a packed field's elements are not counted", l.Field)
		case l.Max < 1:
			return nil, pkgerr.Errorf("transport", "field limit %s: Max %d is below 1", l.Field, l.Max)
		}
		msg := fd.ContainingMessage().FullName()
		if len(out[msg]) == maxLimitsPerMessage {
			return nil, pkgerr.Errorf("transport", "field limit %s: at most %d limits a message", l.Field, maxLimitsPerMessage)
		}
		out[msg] = append(out[msg], fieldLimit{number: fd.Number(), name: l.Field, max: l.Max, setting: l.Setting})
	}
	return out, nil
}

// check refuses buf, an encoded msg, when a limited field of it holds more
// elements than its limit. A malformed buf passes: decoding refuses it.
func (fl fieldLimits) check(buf []byte, msg drpc.Message) error {
	if len(fl) == 0 {
		return nil
	}
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	limits := fl[m.ProtoReflect().Descriptor().FullName()]
	if len(limits) == 0 {
		return nil
	}
	var counts [maxLimitsPerMessage]int // by index in limits
	for len(buf) > 0 {
		num, typ, n := protowire.ConsumeTag(buf)
		if n < 0 {
			return nil
		}
		buf = buf[n:]
		n = protowire.ConsumeFieldValue(num, typ, buf)
		if n < 0 {
			return nil
		}
		buf = buf[n:]
		for i, l := range limits {
			if l.number != num {
				continue
			}
			counts[i]++
			if counts[i] > l.max {
				return limitError(l)
			}
		}
	}
	return nil
}

func limitError(l fieldLimit) error {
	how := "a fixed limit"
	if l.setting != "" {
		how = l.setting
	}
	return Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "%s holds more than %d elements, over the limit (%s)", l.name, l.max, how)
}

// limitedEncoding checks a request's field limits before decoding it.
type limitedEncoding struct {
	drpc.Encoding
	limits fieldLimits
}

func (e limitedEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	if err := e.limits.check(buf, msg); err != nil {
		return err
	}
	return e.Encoding.Unmarshal(buf, msg)
}

// MsgRecv is drpc's MsgRecv with the Server's field limits checked before
// the message is decoded: every message a handler receives, unary request
// or stream message, passes here.
func (s *hookedStream) MsgRecv(msg drpc.Message, enc drpc.Encoding) error {
	if err := s.msgRecv(msg, enc); err != nil || s.authorize == nil {
		return err
	}
	return s.authorize(s.ctx, msg)
}

// msgRecv receives and decodes a message within the field limits and the
// request budget.
func (s *hookedStream) msgRecv(msg drpc.Message, enc drpc.Encoding) error {
	if len(s.limits) > 0 {
		enc = limitedEncoding{Encoding: enc, limits: s.limits}
	}
	if s.conn == nil || s.streamID == 0 || s.manualFlush {
		// A unary request's budget is held until its handler returns.
		return s.Stream.MsgRecv(msg, enc)
	}
	counted := &countingEncoding{Encoding: enc}
	err := s.Stream.MsgRecv(msg, counted)
	if counted.decoded {
		// A stream message is the handler's once decoded: its budget
		// goes back now, not when the stream ends.
		s.received++
		s.conn.releaseReceived(s.streamID, s.received)
	}
	return err
}

// countingEncoding notes that a message was taken off the stream to be
// decoded, whether or not decoding succeeded.
type countingEncoding struct {
	drpc.Encoding
	decoded bool
}

func (e *countingEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	e.decoded = true
	return e.Encoding.Unmarshal(buf, msg)
}

// FieldLimiter checks encoded requests against field limits as a Server
// does, for code that decodes requests itself (and fuzz tests of the
// handlers' decoding).
type FieldLimiter struct{ limits fieldLimits }

// NewFieldLimiter resolves limits; it fails as NewServer's Serve would.
func NewFieldLimiter(limits []FieldLimit) (*FieldLimiter, error) {
	fl, err := newFieldLimits(limits)
	if err != nil {
		return nil, err
	}
	return &FieldLimiter{limits: fl}, nil
}

// Check returns the TOO_LARGE error a Server refuses buf with, an encoded
// msg, or nil.
func (l *FieldLimiter) Check(buf []byte, msg proto.Message) error { return l.limits.check(buf, msg) }
