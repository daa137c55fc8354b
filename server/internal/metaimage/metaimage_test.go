package metaimage

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// TestImageParts: an image split for a message bound comes back whole from
// its parts, every part within the bound unless one record is larger; a
// change among the parts breaks the stream.
func TestImageParts(t *testing.T) {
	img := &pb.MetadataUpdate{Index: 42, Full: true}
	for id := uint32(1); id <= 5; id++ {
		img.Nodes = append(img.Nodes, &pb.NodeRecord{Id: id, RpcAddress: fmt.Sprintf("10.0.0.%d:7000", id)})
	}
	for id := uint64(1); id <= 20; id++ {
		img.Tables = append(img.Tables, &pb.TableRecord{Id: id, Name: fmt.Sprint("t", id)})
		for b := range int32(30) {
			img.Buckets = append(img.Buckets, &pb.BucketRecord{TableId: id, Bucket: b, Replicas: []uint32{1, 2, 3}, Leader: 1, Isr: []uint32{1, 2}})
		}
	}
	for _, maxBytes := range []int{1, 100, 1000, proto.Size(img) - 1, proto.Size(img), 1 << 20} {
		parts := Split(img, maxBytes)
		var a Assembly
		var whole *pb.MetadataUpdate
		for i, p := range parts {
			if !p.GetFull() || p.GetIndex() != img.GetIndex() || p.GetMore() != (i < len(parts)-1) {
				t.Fatalf("max %d: part %d of %d: full %v, index %d, more %v", maxBytes, i, len(parts), p.GetFull(), p.GetIndex(), p.GetMore())
			}
			records := len(p.GetNodes()) + len(p.GetTables()) + len(p.GetBuckets())
			if size := proto.Size(p); size > maxBytes+8 && records > 1 { // 8: index, full and more
				t.Fatalf("max %d: part %d is %d bytes of %d records", maxBytes, i, size, records)
			}
			got, err := a.Add(proto.CloneOf(p))
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != (i == len(parts)-1) {
				t.Fatalf("max %d: part %d of %d gave %v", maxBytes, i, len(parts), got)
			}
			whole = got
		}
		if !proto.Equal(whole, img) {
			t.Fatalf("max %d: %d parts make %v", maxBytes, len(parts), whole)
		}
		if maxBytes >= proto.Size(img) && len(parts) != 1 {
			t.Fatalf("max %d: %d parts of an image of %d bytes", maxBytes, len(parts), proto.Size(img))
		}
	}
	var a Assembly
	parts := Split(img, 1000)
	if _, err := a.Add(parts[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Add(&pb.MetadataUpdate{Index: 43}); err == nil {
		t.Fatal("a change among an image's parts was taken")
	}
}
