package arrowlog

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
	flatbuffers "github.com/google/flatbuffers/go"
)

// smallSchema: an id, a name, a nullable note.
var smallSchema = record.Schema{Columns: []record.Column{
	{Name: "id", Type: record.BigInt()},
	{Name: "name", Type: record.String()},
	{Name: "note", Type: record.Bytes(), Nullable: true},
}}

func smallRows(t *testing.T, s record.Schema, names ...[]byte) [][]byte {
	t.Helper()
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	for i, name := range names {
		enc.SetInt64(0, int64(i))
		if s.Columns[1].Type.Kind() == record.KindString {
			enc.SetStringBytes(1, name)
		} else {
			enc.SetBytes(1, name)
		}
		if i%2 == 0 {
			enc.SetNull(2)
		} else {
			enc.SetBytes(2, []byte("note"))
		}
		row, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows
}

// rewrite parses payload, lets change alter its metadata and body, and
// writes it back.
func rewrite(t *testing.T, payload []byte, change func(m *batchMeta, body []byte) []byte) []byte {
	t.Helper()
	var m batchMeta
	body, err := parseMessage(payload, &m)
	if err != nil {
		t.Fatal(err)
	}
	body = change(&m, bytes.Clone(body))
	return appendMessage(nil, flatbuffers.NewBuilder(0), &m, body)
}

func TestValidateRefuses(t *testing.T) {
	rows := smallRows(t, smallSchema, []byte("ann"), []byte("bob"), []byte("cy"))
	payload := encodeRows(t, smallSchema, Options{}, rows)
	zstdPayload := encodeRows(t, smallSchema, Options{Compression: record.CompressionZstd}, smallRows(t, smallSchema,
		bytes.Repeat([]byte("a"), 500), bytes.Repeat([]byte("b"), 500)))

	// A STRING column read from a BYTES one: the same buffers.
	bytesSchema := record.Schema{Columns: append([]record.Column(nil), smallSchema.Columns...)}
	bytesSchema.Columns[1].Type = record.Bytes()
	badUTF8 := encodeRows(t, bytesSchema, Options{}, smallRows(t, bytesSchema, []byte("ok"), []byte{0xff, 0xfe}))
	// A NOT NULL column read from a nullable one with a null.
	notNull := record.Schema{Columns: append([]record.Column(nil), smallSchema.Columns...)}
	notNull.Columns[2].Nullable = false

	tests := []struct {
		name    string
		schema  record.Schema
		payload []byte
		count   int
		cfg     DecoderConfig
		is      error
		says    string
	}{
		{"record count", smallSchema, payload, 4, DecoderConfig{}, ErrInvalidPayload, "record batch of 3 records, the batch header says 4"},
		{"empty", smallSchema, nil, 3, DecoderConfig{}, ErrInvalidPayload, "no encapsulated message"},
		{"truncated", smallSchema, payload[:len(payload)-8], 3, DecoderConfig{}, ErrInvalidPayload, "body of"},
		{"more columns", record.Schema{Columns: append(append([]record.Column(nil), smallSchema.Columns...),
			record.Column{Name: "x", Type: record.Int(), Nullable: true})}, payload, 3, DecoderConfig{}, ErrInvalidPayload, "field nodes"},
		{"null in NOT NULL", notNull, payload, 3, DecoderConfig{}, record.ErrNullNotAllowed, `column "note": arrowlog: invalid Arrow payload: 2 nulls in a NOT NULL column`},
		{"bad UTF-8", smallSchema, badUTF8, 2, DecoderConfig{}, record.ErrInvalidUTF8, "record 1"},
		{"buffer outside the body", smallSchema, rewrite(t, payload, func(m *batchMeta, body []byte) []byte {
			m.buffers[3].offset = int64(len(body)) - 4
			return body
		}), 3, DecoderConfig{}, ErrInvalidPayload, "buffer 3 at"},
		{"node length", smallSchema, rewrite(t, payload, func(m *batchMeta, body []byte) []byte {
			m.nodes[1].length = 2
			return body
		}), 3, DecoderConfig{}, ErrInvalidPayload, `column "name"`},
		{"null count", smallSchema, rewrite(t, payload, func(m *batchMeta, body []byte) []byte {
			m.nodes[2].nullCount = 1
			return body
		}), 3, DecoderConfig{}, ErrInvalidPayload, "validity bitmap has 2 nulls, the field node says 1"},
		{"offsets decrease", smallSchema, rewrite(t, payload, func(m *batchMeta, body []byte) []byte {
			off := m.buffers[3].offset // name's offsets
			body[off+4] = 9
			return body
		}), 3, DecoderConfig{}, ErrInvalidPayload, "before the previous"},
		{"over the body limit", smallSchema, zstdPayload, 2, DecoderConfig{MaxBodyBytes: 600}, ErrBodyTooLarge, "over the 600-byte limit (MaxBodyBytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoderConfig(tt.schema, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = d.Validate(tt.payload, tt.count)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Validate: %v\nwant an error matching %v that says %q", err, tt.is, tt.says)
			}
		})
	}
}

func TestTimestampOutsideNanos(t *testing.T) {
	s := record.Schema{Columns: []record.Column{{Name: "n", Type: record.Int()}, {Name: "at", Type: record.TimestampLTZ(9)}}}
	enc, _ := record.NewRowEncoder(s)
	tests := []struct {
		millis int64
		nanos  int32
		ok     bool
	}{
		{9223372036854, 775807, true},   // 2262-04-11T23:47:16.854775807
		{9223372036854, 775808, false},  // one nanosecond later
		{-9223372036855, 224192, true},  // 1677-09-21T00:12:43.145224192
		{-9223372036855, 224191, false}, // one nanosecond earlier
		{-62167219200000, 0, false},     // 0000-01-01
	}
	for _, tt := range tests {
		e, _ := NewEncoder(s, Options{})
		enc.SetInt64(0, 1)
		enc.SetTimestamp(1, tt.millis, tt.nanos)
		row, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		err = e.Append(row)
		var rangeErr *TimestampRangeError
		if tt.ok {
			if err != nil {
				t.Fatalf("%d ms + %d ns: %v", tt.millis, tt.nanos, err)
			}
			p, _ := e.Finish(nil)
			checkRows(t, s, p, [][]byte{row})
			continue
		}
		if !errors.As(err, &rangeErr) || !errors.Is(err, ErrTimestampRange) || rangeErr.Column != "at" ||
			!strings.Contains(err.Error(), "1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z") {
			t.Fatalf("%d ms + %d ns: %v, want a *TimestampRangeError naming the limit", tt.millis, tt.nanos, err)
		}
		if e.Len() != 0 || e.SizeEstimate() != emptySize(t, s) {
			t.Fatalf("a refused row left %d rows, %d bytes", e.Len(), e.SizeEstimate())
		}
	}
}

func emptySize(t *testing.T, s record.Schema) int {
	e, err := NewEncoder(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e.SizeEstimate()
}

func TestProjectRefuses(t *testing.T) {
	payload := encodeRows(t, smallSchema, Options{}, smallRows(t, smallSchema, []byte("a")))
	for _, cols := range [][]int{nil, {3}, {-1}, {0, 0}} {
		if _, err := Project(smallSchema, payload, cols, nil); !errors.Is(err, ErrBadProjection) {
			t.Errorf("Project %v: %v, want ErrBadProjection", cols, err)
		}
	}
	if _, err := Project(smallSchema, payload[:20], []int{0}, nil); !errors.Is(err, ErrInvalidPayload) {
		t.Errorf("Project of a truncated payload: %v, want ErrInvalidPayload", err)
	}
}

func TestUnsupportedAndBadOptions(t *testing.T) {
	if _, err := NewEncoder(smallSchema, Options{Compression: record.CompressionLZ4 + 1}); err == nil {
		t.Error("unknown compression accepted")
	}
	if _, err := NewEncoder(smallSchema, Options{Compression: record.CompressionLZ4, Level: 3}); err == nil {
		t.Error("a level for lz4 accepted")
	}
	if _, err := NewDecoderConfig(smallSchema, DecoderConfig{MaxBodyBytes: -1}); err == nil {
		t.Error("a negative limit accepted")
	}
	if _, err := NewEncoder(smallSchema, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Encoder{}).Finish(nil); err == nil {
		t.Error("an empty batch finished")
	}
}
