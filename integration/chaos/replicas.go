package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/floedb/floe/storage/record"
)

// batchSig identifies a batch in a replica's log.
type batchSig struct {
	base, next int64
	crc        uint32
}

// readReplica reads the batches of a stopped node's replica of a bucket,
// oldest first (each segment up to its first torn or empty header).
func readReplica(dir string) ([]batchSig, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []batchSig
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for pos := 0; pos < len(data); {
			n, ok := record.PeekSize(data[pos:])
			if !ok || pos+n > len(data) {
				break
			}
			b := record.Batch(data[pos : pos+n])
			out = append(out, batchSig{base: b.BaseOffset(), next: b.NextOffset(), crc: b.CRC()})
			pos += n
		}
	}
	return out, nil
}

// leftoverTimeout bounds how long CompareReplicas waits for nodes to
// delete the replicas the metadata took from them (a move, a dropped
// partition).
const leftoverTimeout = time.Minute

// replicaDir is node nd's folder of a bucket.
func (nd *Node) replicaDir(tableID uint64, bucket int32) string {
	return filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b%d", tableID, bucket))
}

// replicaSet is the replicas, by bucket, of the log table or of one of
// its partitions, as the metadata lists them; a dropped partition's lists
// are empty: no node may keep its data.
type replicaSet struct {
	partition string // "": the table
	id        uint64 // what its buckets are keyed by
	dropped   bool
	replicas  [][]uint32
}

// bucketName names one of the set's buckets in a difference.
func (s replicaSet) bucketName(b int) string {
	switch {
	case s.dropped:
		return fmt.Sprintf("%s (id %d, dropped) bucket %d", s.partition, s.id, b)
	case s.partition != "":
		return fmt.Sprintf("%s (id %d) bucket %d", s.partition, s.id, b)
	}
	return fmt.Sprintf("bucket %d", b)
}

// leftover is a bucket whose folder nodes hold though the metadata does
// not list them as its replicas.
type leftover struct {
	set    int // index in the sets
	bucket int
	nodes  []uint32
}

// leftovers lists the buckets of the sets that have a folder on nodes
// their replica lists do not name.
func (c *Cluster) leftovers(sets []replicaSet) []leftover {
	var out []leftover
	for i, s := range sets {
		for b, ids := range s.replicas {
			var nodes []uint32
			for _, nd := range c.Nodes {
				if _, err := os.Stat(nd.replicaDir(s.id, int32(b))); err == nil && !slices.Contains(ids, nd.ID) {
					nodes = append(nodes, nd.ID)
				}
			}
			if len(nodes) > 0 {
				out = append(out, leftover{set: i, bucket: b, nodes: nodes})
			}
		}
	}
	return out
}

// CompareReplicas compares, per bucket of the table, the batches its
// replicas (replicas[b], as the metadata lists them) hold in the offset
// range all of them hold: they must be the same batches (offsets and
// checksums). A node the metadata took a replica from (a move) deletes it
// once it learns so: CompareReplicas first waits up to leftoverTimeout
// for every such folder to go, and reports those that stay. It stops
// every node before reading, and returns the differences found.
func (c *Cluster) CompareReplicas(ctx context.Context, tableID uint64, replicas [][]uint32) ([]string, error) {
	return c.compareReplicaSets(ctx, []replicaSet{{id: tableID, replicas: replicas}})
}

// compareReplicaSets is CompareReplicas for the buckets of several sets:
// a table's, or its partitions', including dropped ones, whose folders
// every node must delete.
func (c *Cluster) compareReplicaSets(ctx context.Context, sets []replicaSet) ([]string, error) {
	deadline := time.Now().Add(leftoverTimeout)
	left := c.leftovers(sets)
	for len(left) > 0 && time.Now().Before(deadline) && pause(ctx, 200*time.Millisecond) {
		left = c.leftovers(sets)
	}
	for _, nd := range c.Nodes {
		nd.Stop()
	}
	var diffs []string
	for _, l := range left {
		s := sets[l.set]
		if s.dropped {
			diffs = append(diffs, fmt.Sprintf("%s: nodes %v still hold its data %v after it was dropped",
				s.bucketName(l.bucket), l.nodes, leftoverTimeout))
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: nodes %v still hold its data %v after the metadata took it from them (replicas %v)",
			s.bucketName(l.bucket), l.nodes, leftoverTimeout, s.replicas[l.bucket]))
	}
	slices.Sort(diffs)
	for _, s := range sets {
		for b, ids := range s.replicas {
			ds, err := c.compareBucket(s.id, b, ids)
			if err != nil {
				return nil, err
			}
			for _, d := range ds {
				diffs = append(diffs, s.bucketName(b)+": "+d)
			}
		}
	}
	return diffs, nil
}

// compareBucket compares the replicas (ids) of one bucket on stopped
// nodes with the lowest node's: one difference per replica that does not
// hold the same batches where they overlap.
func (c *Cluster) compareBucket(setID uint64, b int, ids []uint32) ([]string, error) {
	logs := map[uint32][]batchSig{}
	for _, nd := range c.Nodes {
		if !slices.Contains(ids, nd.ID) {
			continue
		}
		dir := nd.replicaDir(setID, int32(b))
		if _, err := os.Stat(dir); err != nil {
			continue // no data yet
		}
		sigs, err := readReplica(dir)
		if err != nil {
			return nil, err
		}
		logs[nd.ID] = sigs
	}
	var ref uint32
	for id := range logs {
		if ref == 0 || id < ref {
			ref = id
		}
	}
	var diffs []string
	for id, sigs := range logs {
		if id == ref {
			continue
		}
		if d := diffLogs(logs[ref], sigs); d != "" {
			diffs = append(diffs, fmt.Sprintf("node %d vs node %d: %s", ref, id, d))
		}
	}
	slices.Sort(diffs)
	return diffs, nil
}

// diffLogs compares two replicas' batches over the offsets both hold.
func diffLogs(a, b []batchSig) string {
	byBase := map[int64]batchSig{}
	for _, s := range a {
		byBase[s.base] = s
	}
	common := 0
	for _, s := range b {
		o, ok := byBase[s.base]
		if !ok {
			continue
		}
		common++
		if o != s {
			return fmt.Sprintf("batch at offset %d differs (next %d/%d, crc %08x/%08x)", s.base, o.next, s.next, o.crc, s.crc)
		}
	}
	if common == 0 && len(a) > 0 && len(b) > 0 && a[len(a)-1].next > b[0].base && b[len(b)-1].next > a[0].base {
		return "no batch in common though their ranges overlap"
	}
	return ""
}
