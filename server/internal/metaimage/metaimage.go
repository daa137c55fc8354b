// Package metaimage is the metadata stream's image in parts: the meta
// role splits an image larger than a message into parts (Split), the
// tablet role joins them (Assembly) and acts on the whole image or, if the
// stream ends first, on none of it.
package metaimage

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// Split splits an image into messages of about maxBytes of records
// each (at least one record): every part has the image's index and full
// set, all but the last have more set, and the records come in the image's
// order, nodes, then tables, partitions, buckets, users and ACL entries; the first
// part carries acls_set and the writer key. An image within maxBytes is one
// message, itself.
func Split(img *pb.MetadataUpdate, maxBytes int) []*pb.MetadataUpdate {
	if proto.Size(img) <= maxBytes {
		return []*pb.MetadataUpdate{img}
	}
	p := imageSplitter{index: img.Index, maxBytes: maxBytes}
	for _, n := range img.Nodes {
		part := p.add(n)
		part.Nodes = append(part.Nodes, n)
	}
	for _, t := range img.Tables {
		part := p.add(t)
		part.Tables = append(part.Tables, t)
	}
	for _, x := range img.Partitions {
		part := p.add(x)
		part.Partitions = append(part.Partitions, x)
	}
	for _, b := range img.Buckets {
		part := p.add(b)
		part.Buckets = append(part.Buckets, b)
	}
	for _, u := range img.Users {
		part := p.add(u)
		part.Users = append(part.Users, u)
	}
	for _, e := range img.Acls {
		part := p.add(e)
		part.Acls = append(part.Acls, e)
	}
	p.parts[0].AclsSet, p.parts[0].WriterKey, p.parts[0].MoveBounds = img.AclsSet, img.WriterKey, img.MoveBounds
	for _, part := range p.parts[:len(p.parts)-1] {
		part.More = true
	}
	return p.parts
}

// imageSplitter collects the parts of Split.
type imageSplitter struct {
	index    uint64
	maxBytes int
	parts    []*pb.MetadataUpdate
	part     *pb.MetadataUpdate // the last of parts
	size     int                // of the records in part
}

// add makes room for record m and returns the part to put it in: the
// current one, or a new one if m would take the current one past maxBytes.
func (p *imageSplitter) add(m proto.Message) *pb.MetadataUpdate {
	n := 1 + protowire.SizeBytes(proto.Size(m)) // tag, length and record in the part
	if p.part == nil || (p.size > 0 && p.size+n > p.maxBytes) {
		p.part = &pb.MetadataUpdate{Index: p.index, Full: true}
		p.parts = append(p.parts, p.part)
		p.size = 0
	}
	p.size += n
	return p.part
}

// Assembly joins the parts of an image (pb.MetadataUpdate.more), so
// the replicas act on the whole image or, if the stream ends first, on none
// of it.
type Assembly struct {
	img *pb.MetadataUpdate // the parts so far; nil: not in an image
}

// Add takes the stream's next message and returns what to act on: the
// message itself outside an image, the whole image with its last part, nil
// while parts are to come. A message that does not continue the image is
// an error: the stream is broken.
func (a *Assembly) Add(u *pb.MetadataUpdate) (*pb.MetadataUpdate, error) {
	switch {
	case a.img == nil && !(u.GetFull() && u.GetMore()):
		return u, nil
	case a.img == nil:
		a.img = u
		return nil, nil
	case !u.GetFull() || u.GetIndex() != a.img.GetIndex():
		return nil, fmt.Errorf("metadata stream: a message at index %d (full %v) among the parts of the image at index %d",
			u.GetIndex(), u.GetFull(), a.img.GetIndex())
	}
	a.img.Nodes = append(a.img.Nodes, u.GetNodes()...)
	a.img.Tables = append(a.img.Tables, u.GetTables()...)
	a.img.Partitions = append(a.img.Partitions, u.GetPartitions()...)
	a.img.Buckets = append(a.img.Buckets, u.GetBuckets()...)
	a.img.Users = append(a.img.Users, u.GetUsers()...)
	a.img.Acls = append(a.img.Acls, u.GetAcls()...)
	if u.GetMore() {
		return nil, nil
	}
	img := a.img
	img.More, a.img = false, nil
	return img, nil
}
