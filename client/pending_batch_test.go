package client

import "testing"

// TestBufferPoolKeepsGrownBuffers: a writer's free buffers come back with
// the capacity they grew to, newest first, and the pool keeps at most its
// bytes, dropping the buffers past them.
func TestBufferPoolKeepsGrownBuffers(t *testing.T) {
	p := newBufferPool(4 * 1024 * freeBufferShare) // keeps 4 KiB
	grown := func(n int) *batchBuffer {
		b := p.get()
		b.rows = append(b.rows[:0], make([]byte, n)...)
		return b
	}
	a, b, c := grown(1024), grown(2048), grown(2048)
	p.put(a)
	p.put(b)
	p.put(c) // 1 KiB + 2 KiB kept: c would pass 4 KiB
	if p.bytes != a.size()+b.size() || len(p.free) != 2 {
		t.Fatalf("pool holds %d buffers of %d bytes, want a and b (%d bytes)", len(p.free), p.bytes, a.size()+b.size())
	}
	if got := p.get(); got != b || cap(got.rows) < 2048 {
		t.Fatalf("get gave %p (cap %d), want b (%p) with its capacity", got, cap(got.rows), b)
	}
	if got := p.get(); got != a {
		t.Fatalf("get gave %p, want a (%p)", got, a)
	}
	if p.bytes != 0 {
		t.Fatalf("an empty pool counts %d bytes", p.bytes)
	}
	if got := p.get(); got == a || got == b || got == c || cap(got.rows) != 0 {
		t.Fatalf("an empty pool gave a used buffer %p", got)
	}
}
