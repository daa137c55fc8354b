package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/floedb/floe/storage/record"
)

// Partition cuts the nodes of different groups apart, both ways; nodes
// named in no group stay connected to every node. Heal undoes it.
func (c *Cluster) Partition(ctx context.Context, groups ...[]uint32) error {
	for gi, g := range groups {
		for gj, h := range groups {
			if gi == gj {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					if err := c.net.cut(ctx, int(a), int(b)); err != nil {
						return err
					}
				}
			}
		}
	}
	c.logf("partition %v", groups)
	return nil
}

// CutOneWay drops what nodes from send to nodes to (not the answers the
// other way, which then find no request).
func (c *Cluster) CutOneWay(ctx context.Context, from, to []uint32) error {
	for _, a := range from {
		for _, b := range to {
			if err := c.net.cut(ctx, int(a), int(b)); err != nil {
				return err
			}
		}
	}
	c.logf("one-way cut %v -> %v", from, to)
	return nil
}

// Ring connects each node only to its neighbours (i-1, i+1 around the
// ring): with 3 nodes a bridge (1-2-3, 1 and 3 apart), with 5 a ring in
// which every node sees a majority counting itself only through others.
func (c *Cluster) Ring(ctx context.Context) error {
	n := len(c.Nodes)
	connected := func(a, b int) bool {
		if n == 3 {
			return a == 2 || b == 2 // a bridge through node 2
		}
		d := (a - b + n) % n
		return d == 1 || d == n-1
	}
	for a := 1; a <= n; a++ {
		for b := 1; b <= n; b++ {
			if a != b && !connected(a, b) {
				if err := c.net.cut(ctx, a, b); err != nil {
					return err
				}
			}
		}
	}
	c.logf("ring")
	return nil
}

// Heal removes every partition and cut.
func (c *Cluster) Heal(ctx context.Context) error {
	c.logf("heal")
	return c.net.heal(ctx)
}

// Loss drops a percentage of the packets between a node and the others,
// both ways, until Heal.
func (c *Cluster) Loss(ctx context.Context, id uint32, percent float64) error {
	c.logf("node %d: %.1f%% packet loss", id, percent)
	return c.net.loss(ctx, int(id), percent)
}

// HasNetem says whether Netem can add latency here (the kernel has tc's
// netem qdisc; some virtual machines' kernels do not).
func (c *Cluster) HasNetem(ctx context.Context) bool { return c.net.hasNetem(ctx) }

// Netem adds latency and packet loss (percent) to a node's link, both
// ways, with tc netem; zero values clear it.
func (c *Cluster) Netem(ctx context.Context, id uint32, delay time.Duration, lossPercent float64) error {
	c.mu.Lock()
	if c.netem == nil {
		c.netem = map[uint32]bool{}
	}
	set := delay != 0 || lossPercent != 0
	was := c.netem[id]
	c.netem[id] = set
	c.mu.Unlock()
	if !set && !was {
		return nil
	}
	c.logf("netem node %d: delay %v, loss %.1f%%", id, delay, lossPercent)
	return c.net.netem(ctx, int(id), delay, lossPercent)
}

// BlockS3 makes the S3 server unreachable from every node; UnblockS3
// undoes it.
func (c *Cluster) BlockS3(ctx context.Context) error {
	if c.s3 == nil {
		return errors.New("chaos: the cluster has no S3 server")
	}
	c.logf("S3 unreachable")
	return c.net.blockStore(ctx, c.s3.port)
}

func (c *Cluster) UnblockS3(ctx context.Context) error {
	c.logf("S3 reachable again")
	return c.net.unblockStore(ctx)
}

// fillFile is the file FillDisk takes a node's free space with.
const fillFile = "chaos-fill"

// FillDisk takes all but slack bytes of the free space of a node's data
// folder (a tmpfs: Options.DiskBytes); FreeDisk gives it back.
func (nd *Node) FillDisk(slack int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(nd.DataDir, &st); err != nil {
		return err
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	f, err := os.OpenFile(filepath.Join(nd.DataDir, fillFile), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	// The node writes meanwhile: take less each time the space ran out.
	for size := free - slack; size > 0; size -= 1 << 20 {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("chaos: fill node %d's disk: %w", nd.ID, err)
		}
	}
	nd.c.logf("node %d disk full (%d bytes left)", nd.ID, slack)
	return nil
}

func (nd *Node) FreeDisk() error {
	err := os.Remove(filepath.Join(nd.DataDir, fillFile))
	if err == nil {
		nd.c.logf("node %d disk freed", nd.ID)
	}
	return err
}

// Segments lists a node's segment files of a bucket, oldest first.
func (nd *Node) Segments(tableID uint64, bucket int32) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b%d", tableID, bucket), "*.log"))
	sort.Strings(files)
	return files, err
}

// FlipBit flips one bit of a batch in the node's oldest segment of a
// bucket (inside what its batches hold, past the first header), as a disk
// that rots would, and returns the file and byte.
func (nd *Node) FlipBit(tableID uint64, bucket int32, rng *rand.Rand) (string, int64, error) {
	files, err := nd.Segments(tableID, bucket)
	if err != nil || len(files) == 0 {
		return "", 0, fmt.Errorf("chaos: node %d has no segment of %d/%d: %v", nd.ID, tableID, bucket, err)
	}
	path := files[0]
	end, err := batchesEnd(path)
	if err != nil || end <= record.HeaderSize {
		return "", 0, fmt.Errorf("chaos: node %d: %s holds no batch to damage (%v)", nd.ID, path, err)
	}
	pos := record.HeaderSize + rng.Int64N(end-record.HeaderSize)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		return "", 0, err
	}
	b[0] ^= 1 << rng.IntN(8)
	if _, err := f.WriteAt(b, pos); err != nil {
		return "", 0, err
	}
	nd.c.logf("node %d: flipped a bit of %s at byte %d", nd.ID, filepath.Base(path), pos)
	return path, pos, nil
}

// TearTail cuts the node's newest segment of a bucket in the middle of its
// last batch, as a crash mid-write leaves it. The node must be stopped.
func (nd *Node) TearTail(tableID uint64, bucket int32) (string, int64, error) {
	if nd.Running() {
		return "", 0, fmt.Errorf("chaos: tear node %d's tail while it runs", nd.ID)
	}
	files, err := nd.Segments(tableID, bucket)
	if err != nil || len(files) == 0 {
		return "", 0, fmt.Errorf("chaos: node %d has no segment of %d/%d: %v", nd.ID, tableID, bucket, err)
	}
	for _, path := range slices.Backward(files) {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", 0, err
		}
		last, pos := -1, 0
		for pos < len(data) {
			n, ok := record.PeekSize(data[pos:])
			if !ok || pos+n > len(data) {
				break
			}
			last, pos = pos, pos+n
		}
		if last < 0 {
			continue // an empty active segment: tear the one before
		}
		cut := int64(last + (pos-last)/2)
		if err := os.Truncate(path, cut); err != nil {
			return "", 0, err
		}
		nd.c.logf("node %d: tore %s at byte %d (its last batch spans [%d, %d))", nd.ID, filepath.Base(path), cut, last, pos)
		return path, cut, nil
	}
	return "", 0, fmt.Errorf("chaos: node %d holds no batch of %d/%d", nd.ID, tableID, bucket)
}

// batchesEnd is where the batches of a segment file end (a preallocated
// file is zeros after them).
func batchesEnd(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pos := 0
	for pos < len(data) {
		n, ok := record.PeekSize(data[pos:])
		if !ok || pos+n > len(data) {
			break
		}
		pos += n
	}
	return int64(pos), nil
}
