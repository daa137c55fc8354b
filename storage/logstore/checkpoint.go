package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/pkgerr"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpointMagic starts every small state file the log writes.
const checkpointMagic = 0x464c4f45 // "FLOE"

// writeCheckpoint replaces dir/name with payload, atomically and durably:
// the file is either the old one or the new one after a crash, never a mix.
// Layout: magic (4) | payload length (4) | payload | CRC-32C of the previous bytes (4).
func writeCheckpoint(dir, name string, payload []byte) error {
	return writeFileAtomic(dir, name, encodeCheckpoint(payload), true)
}

// writeCheckpointCached is writeCheckpoint without the fsyncs: after a
// crash the file is the old one, the new one, or unreadable (its CRC
// fails), so it suits only a checkpoint whose loss costs time, not
// correctness (the periodic recovery point: an older one only makes
// recovery scan more).
func writeCheckpointCached(dir, name string, payload []byte) error {
	return writeFileAtomic(dir, name, encodeCheckpoint(payload), false)
}

func encodeCheckpoint(payload []byte) []byte {
	buf := make([]byte, 0, 12+len(payload))
	buf = binary.BigEndian.AppendUint32(buf, checkpointMagic)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	buf = append(buf, payload...)
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// readCheckpoint returns the payload of dir/name. A missing file returns an
// error satisfying errors.Is(err, os.ErrNotExist); a damaged one ErrCorrupt.
func readCheckpoint(dir, name string) ([]byte, error) {
	buf, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return decodeCheckpoint(name, buf)
}

// decodeCheckpoint returns the payload of an encoded checkpoint named name
// (for errors); damage is ErrCorrupt.
func decodeCheckpoint(name string, buf []byte) ([]byte, error) {
	if len(buf) < 12 || binary.BigEndian.Uint32(buf) != checkpointMagic {
		return nil, fmt.Errorf("%w: %s: bad header", ErrCorrupt, name)
	}
	n := int(binary.BigEndian.Uint32(buf[4:]))
	if n != len(buf)-12 {
		return nil, fmt.Errorf("%w: %s: length %d in a %d-byte file", ErrCorrupt, name, n, len(buf))
	}
	if crc32.Checksum(buf[:8+n], castagnoli) != binary.BigEndian.Uint32(buf[8+n:]) {
		return nil, fmt.Errorf("%w: %s: bad checksum", ErrCorrupt, name)
	}
	return buf[8 : 8+n], nil
}

// writeFileAtomic writes data to a temporary file, fsyncs it, renames it over
// dir/name and fsyncs the folder.
func writeFileAtomic(dir, name string, data []byte, durable bool) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return pkgerr.Errorf("logstore", "%w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return pkgerr.Errorf("logstore", "write %s: %w", tmp, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("%w: %s: %v", ErrSyncFailed, tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return pkgerr.Errorf("logstore", "close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return pkgerr.Errorf("logstore", "%w", err)
	}
	if !durable {
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return pkgerr.Errorf("logstore", "%w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%w: folder %s: %v", ErrSyncFailed, dir, err)
	}
	return nil
}
