package kvstore

import (
	"encoding/binary"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// crcOffset is where a batch header keeps its CRC (storage/record).
const crcOffset = 25

// FuzzAppendChanges feeds arbitrary batches to the changelog decoder: it
// must return changes or an error, never panic, and every change it
// returns must carry a key and a known change type.
func FuzzAppendChanges(f *testing.F) {
	s, err := record.ParseSchema("id BIGINT NOT NULL, v STRING")
	if err != nil {
		f.Fatal(err)
	}
	s.PrimaryKey = []string{"id"}
	keys, err := NewKeys(s, nil)
	if err != nil {
		f.Fatal(err)
	}
	enc, _ := record.NewRowEncoder(s)
	enc.SetInt64(0, 7)
	enc.SetString(1, "seven")
	row, _ := enc.Finish(nil)
	for _, kind := range []record.ChangeType{record.Insert, record.UpdateBefore, record.UpdateAfter, record.Delete} {
		b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRows}, 0)
		b.Append(kind, row)
		batch, _ := b.Build()
		f.Add([]byte(batch), int64(0))
	}
	codec, err := record.NewCodec(record.CodecConfig{})
	if err != nil {
		f.Fatal(err)
	}
	defer codec.Close()
	f.Fuzz(func(t *testing.T, data []byte, from int64) {
		// Fix the CRC up (on a copy), so the fuzzer explores payloads, not
		// checksums.
		data = append([]byte(nil), data...)
		h, err := record.CheckHeader(data)
		if err != nil {
			return
		}
		binary.BigEndian.PutUint32(h[crcOffset:], h.ComputeCRC())
		b, err := record.Check(h)
		if err != nil {
			return
		}
		changes, err := AppendChanges(nil, b, codec, keys, from)
		if err != nil {
			return
		}
		for _, c := range changes {
			if len(c.Key) == 0 || (c.Kind != record.Insert && c.Kind != record.UpdateAfter && c.Kind != record.Delete) {
				t.Fatalf("bad change %+v", c)
			}
		}
	})
}
