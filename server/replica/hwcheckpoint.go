package replica

import (
	"cmp"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/floedb/floe/internal/pkgerr"
)

// The node's high-watermark checkpoint: one file for all its replicas
// (Kafka's replication-offset-checkpoint), rewritten every
// hwCheckpointInterval when any replica's high watermark moved, instead of
// a file per replica. It is not fsynced: a restarted replica takes
// min(checkpoint, log end), and a lost or older checkpoint only gives a
// lower high watermark, which is safe. A replica missing from it falls
// back to the file earlier builds kept in the replica's folder.
//
// Layout (big-endian): magic u32 | count u32 | count × (table u64, bucket
// i32, hw i64) | CRC-32C of all before.
const (
	hwCheckpointFile  = "high-watermarks"
	hwCheckpointMagic = 0x464c4857 // "FLHW"
	hwEntryBytes      = 8 + 4 + 8
	// legacyHWFile is the per-replica checkpoint of earlier builds.
	legacyHWFile = "high-watermark"
)

// hwCheckpoint is the node's checkpoint as last read or written.
type hwCheckpoint struct {
	dir string

	mu    sync.Mutex // serializes saves
	saved map[BucketID]int64
}

// loadHWCheckpoint reads the node's checkpoint in dir; a missing or
// damaged file gives an empty one (damage is reported, and costs only
// lower high watermarks).
func loadHWCheckpoint(dir string) (*hwCheckpoint, error) {
	c := &hwCheckpoint{dir: dir, saved: map[BucketID]int64{}}
	buf, err := os.ReadFile(filepath.Join(dir, hwCheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if c.saved, err = decodeHWCheckpoint(buf); err != nil {
		c.saved = map[BucketID]int64{}
		return c, err
	}
	return c, nil
}

func decodeHWCheckpoint(buf []byte) (map[BucketID]int64, error) {
	if len(buf) < 12 || binary.BigEndian.Uint32(buf) != hwCheckpointMagic {
		return nil, pkgerr.Errorf("replica", "%s: bad header", hwCheckpointFile)
	}
	n := int(binary.BigEndian.Uint32(buf[4:]))
	if len(buf) != 8+n*hwEntryBytes+4 {
		return nil, pkgerr.Errorf("replica", "%s: %d entries in %d bytes", hwCheckpointFile, n, len(buf))
	}
	if crc32.Checksum(buf[:len(buf)-4], castagnoli) != binary.BigEndian.Uint32(buf[len(buf)-4:]) {
		return nil, pkgerr.Errorf("replica", "%s: bad checksum", hwCheckpointFile)
	}
	out := make(map[BucketID]int64, n)
	for p := buf[8 : len(buf)-4]; len(p) > 0; p = p[hwEntryBytes:] {
		id := BucketID{TableID: binary.BigEndian.Uint64(p), Bucket: int32(binary.BigEndian.Uint32(p[8:]))}
		out[id] = int64(binary.BigEndian.Uint64(p[12:]))
	}
	return out, nil
}

func encodeHWCheckpoint(hws map[BucketID]int64) []byte {
	ids := make([]BucketID, 0, len(hws))
	for id := range hws {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b BucketID) int {
		return cmp.Or(cmp.Compare(a.TableID, b.TableID), cmp.Compare(a.Bucket, b.Bucket))
	})
	buf := make([]byte, 0, 8+len(ids)*hwEntryBytes+4)
	buf = binary.BigEndian.AppendUint32(buf, hwCheckpointMagic)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(ids)))
	for _, id := range ids {
		buf = binary.BigEndian.AppendUint64(buf, id.TableID)
		buf = binary.BigEndian.AppendUint32(buf, uint32(id.Bucket))
		buf = binary.BigEndian.AppendUint64(buf, uint64(hws[id]))
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// get returns the checkpointed high watermark of a replica in dir: the
// node's checkpoint, else the file an earlier build kept there, else 0.
func (c *hwCheckpoint) get(id BucketID, dir string) int64 {
	c.mu.Lock()
	hw, ok := c.saved[id]
	c.mu.Unlock()
	if ok {
		return hw
	}
	buf, err := os.ReadFile(filepath.Join(dir, legacyHWFile))
	if err != nil || len(buf) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(buf))
}

// save writes hws, the high watermarks of the node's open replicas, unless
// they are what the file holds already. Replicas not in hws (deleted)
// leave the file.
func (c *hwCheckpoint) save(hws map[BucketID]int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(hws) == len(c.saved) {
		same := true
		for id, hw := range hws {
			if old, ok := c.saved[id]; !ok || old != hw {
				same = false
				break
			}
		}
		if same {
			return nil
		}
	}
	if err := replaceFile(c.dir, hwCheckpointFile, encodeHWCheckpoint(hws)); err != nil {
		return err
	}
	c.saved = hws
	return nil
}

// replaceFile puts data in dir/name through a temporary file and a
// rename, so a reader finds the old file or the new one, never a mix. It
// does not fsync: for the state files whose loss costs time, not
// correctness (high watermarks, the writer-state snapshot).
func replaceFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}
