package metastate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// The catalog of the scale benchmarks: 100 tables of 1,000 buckets, three
// replicas each, over 30 tablet nodes (10,000 replicas a node).
const (
	scaleTables       = 100
	scaleBuckets      = 1000
	scaleTabletNodes  = 30
	scaleReplication  = 3
	scaleSmallBuckets = 10
)

// scaleCatalog fills a state with the benchmarks' catalog.
func scaleCatalog(b *testing.B) *harness {
	b.Helper()
	h := newHarness(b)
	h.tabletNodes(scaleTabletNodes)
	h.ok(createDB("db"))
	for i := range scaleTables {
		h.ok(createTable(ordersTable("db", fmt.Sprintf("t%03d", i), func(c *pb.CreateTable) {
			c.Buckets, c.Replication = scaleBuckets, scaleReplication
		})))
	}
	return h
}

// BenchmarkCatalog100k measures the state machine over a catalog of
// 100,000 buckets: what a command, a snapshot, a restore and an image cost
// there. Run it with -benchtime=1x for the snapshot and image figures;
// the command figures are per op.
func BenchmarkCatalog100k(b *testing.B) {
	h := scaleCatalog(b)
	b.Run("create-table-10", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			h.ok(createTable(ordersTable("db", fmt.Sprintf("small%06d", i), func(c *pb.CreateTable) {
				c.Buckets, c.Replication = scaleSmallBuckets, scaleReplication
			})))
		}
	})
	b.Run("create-table-1000", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			h.ok(createTable(ordersTable("db", fmt.Sprintf("big%06d", i), func(c *pb.CreateTable) {
				c.Buckets, c.Replication = scaleBuckets, scaleReplication
			})))
		}
	})
	b.Run("register-node-again", func(b *testing.B) {
		for b.Loop() {
			h.ok(registerNode(1, "", RoleTablet))
		}
	})
	b.Run("fence-nothing", func(b *testing.B) {
		for b.Loop() {
			h.ok(fenceNodes())
		}
	})
	b.Run("image", func(b *testing.B) {
		var size int
		for b.Loop() {
			img, err := h.s.Image()
			if err != nil {
				b.Fatal(err)
			}
			size = proto.Size(img)
		}
		b.ReportMetric(float64(size)/(1<<20), "MiB")
	})
	b.Run("snapshot", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := h.s.WriteSnapshot(&buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/(1<<20), "MiB")
	})
	b.Run("restore", func(b *testing.B) {
		var buf bytes.Buffer
		if err := h.s.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "restored.db")
		s, err := Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for b.Loop() {
			if err := s.Restore(bytes.NewReader(buf.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(info.Size())/(1<<20), "MiB")
	})
}
