package server

import (
	"testing"

	"github.com/floedb/floe/transport/pb"
)

// countingState is a metadata state that counts the images read.
type countingState struct {
	applied uint64
	images  int
}

func (c *countingState) AppliedIndex() uint64 { return c.applied }

func (c *countingState) Image() (*pb.MetadataUpdate, error) {
	c.images++
	return &pb.MetadataUpdate{Index: c.applied, Full: true}, nil
}

// TestControllerReadsTheImageOnlyAfterAChange: the controller's ticks read
// the metadata image again only once something was applied since the last
// read.
func TestControllerReadsTheImageOnlyAfterAChange(t *testing.T) {
	st := &countingState{applied: 7}
	var v metadataView
	for range 100 {
		img, err := v.current(st)
		if err != nil || img.GetIndex() != 7 {
			t.Fatalf("image %v, %v", img, err)
		}
	}
	if st.images != 1 {
		t.Fatalf("%d images read over 100 ticks with nothing applied, want 1", st.images)
	}
	st.applied = 8
	if img, _ := v.current(st); img.GetIndex() != 8 || st.images != 2 {
		t.Fatalf("after a change: image at %d, %d images read", img.GetIndex(), st.images)
	}
}
