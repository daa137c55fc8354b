package arrowlog

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler is the Encoder's memory.Allocator: it keeps the buffers a
// released batch frees, by power-of-two capacity, and hands them to the
// next batch, cleared. The builders start every batch empty; fresh memory
// for each (the Go allocator's) cost page faults and two zeroing passes
// per byte, more than the encoding. It is not safe for concurrent use,
// as the Encoder that owns it.
type recycler struct {
	free [maxClass + 1][][]byte
}

const (
	minClass = 6  // 64 bytes
	maxClass = 30 // 1 GiB
	// keptPerClass bounds the free buffers of one capacity: a batch's
	// columns take a few of each.
	keptPerClass = 16
)

var _ memory.Allocator = (*recycler)(nil)

// class is the power of two capacity that holds size bytes.
func class(size int) int {
	if size <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(size - 1))
}

func (r *recycler) Allocate(size int) []byte {
	c := class(size)
	if c > maxClass {
		return make([]byte, size)
	}
	if list := r.free[c]; len(list) > 0 {
		b := list[len(list)-1]
		r.free[c] = list[:len(list)-1]
		b = b[:size]
		clear(b)
		return b
	}
	return make([]byte, size, 1<<c)
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	c := cap(b)
	if c < 1<<minClass || c&(c-1) != 0 {
		return // not one of ours
	}
	k := bits.Len(uint(c)) - 1
	if k <= maxClass && len(r.free[k]) < keptPerClass {
		r.free[k] = append(r.free[k], b[:0])
	}
}
