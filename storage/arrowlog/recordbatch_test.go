package arrowlog

import (
	"testing"

	"github.com/floedb/floe/storage/record"
)

// TestBatchReaderReadsPayloads: a payload reads back as the record batch
// of its rows, every value of every kind, compressed or not; a payload
// said to hold another count of rows is corrupt.
func TestBatchReaderReadsPayloads(t *testing.T) {
	s := allKindsSchema()
	rows := sampleRows(t, s, 50)
	r, err := NewBatchReader(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range compressions {
		t.Run(comp.String(), func(t *testing.T) {
			payload := encodeRows(t, s, Options{Compression: comp}, rows)
			for range 2 { // the reader is reused
				rec, err := r.Read(payload, len(rows))
				if err != nil {
					t.Fatal(err)
				}
				for c, col := range rec.Columns() {
					for i, row := range rows {
						compareValue(t, s.Columns[c].Type, record.NewRowView(s, row), c, col, i)
					}
				}
				rec.Release()
			}
			if _, err := r.Read(payload, len(rows)+1); err == nil {
				t.Fatal("a payload read as one of another row count")
			}
			if _, err := r.Read(payload[:len(payload)/2], len(rows)); err == nil {
				t.Fatal("half a payload read")
			}
		})
	}
}
