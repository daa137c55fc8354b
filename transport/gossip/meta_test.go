package gossip

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []nodeMeta{
		{},
		{ClusterID: "c1", RPCAddress: "10.0.0.1:7400", Incarnation: "0123456789abcdef", Roles: []string{"meta", "tablet"}},
		{RPCAddress: "[::1]:7400", Incarnation: "x", Roles: []string{"tablet"}, Leaving: true},
	} {
		buf, err := m.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMeta(buf)
		if err != nil {
			t.Fatalf("decode %+v: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %+v, want %+v", got, m)
		}
		// Fields appended by a later layout are ignored.
		if got, err := decodeMeta(append(buf, 7, 7)); err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("with trailing bytes: %+v, %v", got, err)
		}
	}
}

func TestMetaRejectsMalformed(t *testing.T) {
	good, _ := nodeMeta{ClusterID: "c1", RPCAddress: "a:1", Incarnation: "i", Roles: []string{"r"}}.encode()
	for name, buf := range map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{2}, good[1:]...),
		"truncated":     good[:len(good)-1],
		"long field":    {1, 200, 'a'},
		"bad varint":    {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"too many role": {1, 0, 0, 0, 100, 0},
	} {
		if _, err := decodeMeta(buf); !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: %v, want ErrInvalidMeta", name, err)
		}
	}
}

func TestMetaTooLarge(t *testing.T) {
	cfg := Config{NodeID: 1, BindAddress: "127.0.0.1:0", RPCAddress: "a:1", Incarnation: strings.Repeat("x", 600)}
	if err := cfg.Validate(); !errors.Is(err, ErrMetaTooLarge) {
		t.Errorf("Validate: %v, want ErrMetaTooLarge", err)
	}
	if _, err := New(cfg); !errors.Is(err, ErrMetaTooLarge) {
		t.Errorf("New: %v, want ErrMetaTooLarge", err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	good, _ := nodeMeta{ClusterID: "c1", RPCAddress: "10.0.0.1:7400", Incarnation: "i", Roles: []string{"meta", "tablet"}, Leaving: true}.encode()
	f.Add(good)
	f.Add([]byte{1, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		m, err := decodeMeta(buf)
		if err != nil {
			if !errors.Is(err, ErrInvalidMeta) {
				t.Fatalf("error %v is not ErrInvalidMeta", err)
			}
			return
		}
		// What decodes re-encodes (no longer than the input: trailing
		// bytes are ignored, lengths may have been overlong varints) to
		// the same meta.
		again, err := m.encode()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if len(again) > len(buf) {
			t.Fatalf("re-encoded %x is longer than %x", again, buf)
		}
		m2, err := decodeMeta(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode: %+v, %v; want %+v", m2, err, m)
		}
	})
}
