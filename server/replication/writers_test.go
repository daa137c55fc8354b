package replication

import (
	"errors"
	"testing"
)

// TestWriterTableCheck: the next sequence appends, a remembered one is a
// duplicate with its offsets, anything else is out of order, and a
// pipelined batch of a writer the table does not know is refused (produce
// 2 and 5).
func TestWriterTableCheck(t *testing.T) {
	wt := NewWriterTable()
	if _, err := wt.Check(7, 3, true); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("pipelined batch of an unknown writer: %v", err)
	}
	if dup, err := wt.Check(7, 3, false); dup != nil || err != nil {
		t.Fatalf("first batch of an unknown writer: %v %v", dup, err)
	}
	for seq := range int32(7) {
		wt.Remember(7, WriterBatch{Seq: seq, Base: int64(seq) * 2, Last: int64(seq)*2 + 1})
	}
	tests := []struct {
		name      string
		seq       int32
		pipelined bool
		dupBase   int64 // -1: not a duplicate
		refused   bool
	}{
		{"next", 7, false, -1, false},
		{"next pipelined", 7, true, -1, false},
		{"remembered", 4, false, 8, false},
		{"oldest remembered", 2, true, 4, false},
		{"forgotten", 1, false, -1, true},
		{"gap", 9, true, -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dup, err := wt.Check(7, tt.seq, tt.pipelined)
			var oe *OutOfOrderError
			if tt.refused != errors.As(err, &oe) || (tt.refused && !errors.Is(err, ErrOutOfOrderSequence)) {
				t.Fatalf("err %v, want refused %v", err, tt.refused)
			}
			if tt.refused && (oe.Expected != 7 || oe.Unknown) {
				t.Fatalf("refusal %+v", oe)
			}
			if (dup != nil) != (tt.dupBase >= 0) || (dup != nil && dup.Base != tt.dupBase) {
				t.Fatalf("dup %+v, want base %d", dup, tt.dupBase)
			}
		})
	}
}
