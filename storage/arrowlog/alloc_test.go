package arrowlog

import (
	"bytes"
	"testing"
)

// TestRecycler: freed buffers come back cleared, of the size asked; a
// reallocation keeps the bytes it had; buffers it did not make are not
// kept.
func TestRecycler(t *testing.T) {
	var r recycler
	a := r.Allocate(100)
	if len(a) != 100 || cap(a) != 128 {
		t.Fatalf("Allocate(100): len %d cap %d", len(a), cap(a))
	}
	for i := range a {
		a[i] = 0xff
	}
	r.Free(a)
	b := r.Allocate(70)
	if &b[:1][0] != &a[:1][0] || len(b) != 70 || !bytes.Equal(b, make([]byte, 70)) {
		t.Fatalf("a freed buffer came back as %x (reused %v)", b, &b[:1][0] == &a[:1][0])
	}
	copy(b, "kept")
	c := r.Reallocate(1000, b)
	if string(c[:4]) != "kept" || len(c) != 1000 || !bytes.Equal(c[4:], make([]byte, 996)) {
		t.Fatalf("Reallocate lost bytes or left garbage: %q", c[:8])
	}
	c = r.Reallocate(500, c)
	if len(c) != 500 || string(c[:4]) != "kept" {
		t.Fatalf("shrinking Reallocate: len %d %q", len(c), c[:4])
	}
	r.Free(make([]byte, 100)) // a capacity not a power of two: not ours
	for k, list := range r.free {
		for _, buf := range list {
			if cap(buf) != 1<<k {
				t.Fatalf("class %d holds a buffer of capacity %d", k, cap(buf))
			}
		}
	}
}
