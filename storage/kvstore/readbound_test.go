package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// TestAppendPackedBounds: the room AppendPacked makes ahead is capped (one
// 256 KiB row before 4095 missing keys asked for 1 GiB), and a maxBytes
// bound stops the read with ErrAnswerTooLarge while rows within it are
// answered whole.
func TestAppendPackedBounds(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	big := bytes.Repeat([]byte("r"), 256<<10)
	batch := []Change{{Key: []byte("k0"), Row: big, Kind: record.Insert}, {Key: []byte("k1"), Row: big, Kind: record.Insert}}
	if err := s.Apply(batch, 2); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("k0")}
	for i := range 4095 {
		keys = append(keys, fmt.Appendf(nil, "missing%d", i))
	}
	p, err := s.AppendPacked(nil, keys, 0)
	data, sizes := p.Data, p.Sizes
	if err != nil || len(data) != len(big) || sizes[0] != uint32(len(big)) {
		t.Fatalf("AppendPacked: %d bytes, sizes[0] %d, %v", len(data), sizes[0], err)
	}
	if cap(data) > len(big)+maxPresizeBytes {
		t.Fatalf("AppendPacked made %d bytes of room for a %d-byte answer; at most %d", cap(data), len(data), len(big)+maxPresizeBytes)
	}

	both := [][]byte{[]byte("k0"), []byte("k1")}
	if _, err := s.AppendPacked(nil, both, len(big)+1); !errors.Is(err, ErrAnswerTooLarge) {
		t.Fatalf("two rows over the bound: %v, want ErrAnswerTooLarge", err)
	}
	if p, err := s.AppendPacked(nil, both, 2*len(big)); err != nil || len(p.Data) != 2*len(big) {
		t.Fatalf("two rows within the bound: %d bytes, %v", len(data), err)
	}
}
