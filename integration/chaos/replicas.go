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
// delete the replicas the metadata took from them (a move).
const leftoverTimeout = time.Minute

// replicaDir is node nd's folder of a bucket.
func (nd *Node) replicaDir(tableID uint64, bucket int32) string {
	return filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b%d", tableID, bucket))
}

// leftovers lists, per bucket, the nodes that hold a folder of it though
// replicas (the metadata's replica sets, by bucket) does not list them.
func (c *Cluster) leftovers(tableID uint64, replicas [][]uint32) map[int32][]uint32 {
	out := map[int32][]uint32{}
	for b, ids := range replicas {
		for _, nd := range c.Nodes {
			if _, err := os.Stat(nd.replicaDir(tableID, int32(b))); err == nil && !slices.Contains(ids, nd.ID) {
				out[int32(b)] = append(out[int32(b)], nd.ID)
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
	deadline := time.Now().Add(leftoverTimeout)
	left := c.leftovers(tableID, replicas)
	for len(left) > 0 && time.Now().Before(deadline) && pause(ctx, 200*time.Millisecond) {
		left = c.leftovers(tableID, replicas)
	}
	for _, nd := range c.Nodes {
		nd.Stop()
	}
	var diffs []string
	for b, ids := range left {
		diffs = append(diffs, fmt.Sprintf("bucket %d: nodes %v still hold its data %v after the metadata took it from them (replicas %v)",
			b, ids, leftoverTimeout, replicas[b]))
	}
	slices.Sort(diffs)
	for b, ids := range replicas {
		logs := map[uint32][]batchSig{}
		for _, nd := range c.Nodes {
			if !slices.Contains(ids, nd.ID) {
				continue
			}
			dir := nd.replicaDir(tableID, int32(b))
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
		for id, sigs := range logs {
			if id == ref {
				continue
			}
			if d := diffLogs(logs[ref], sigs); d != "" {
				diffs = append(diffs, fmt.Sprintf("bucket %d: node %d vs node %d: %s", b, ref, id, d))
			}
		}
	}
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
