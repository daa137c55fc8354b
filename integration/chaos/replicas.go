package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

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

// CompareReplicas stops every node and compares, per bucket of the table,
// the batches every replica holds in the offset range all of them hold:
// they must be the same batches (offsets and checksums). It returns the
// differences found.
func (c *Cluster) CompareReplicas(tableID uint64, buckets int32) ([]string, error) {
	for _, nd := range c.Nodes {
		nd.Stop()
	}
	var diffs []string
	for b := range buckets {
		logs := map[uint32][]batchSig{}
		for _, nd := range c.Nodes {
			dir := filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b%d", tableID, b))
			if _, err := os.Stat(dir); err != nil {
				continue // not a replica of this bucket
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
