package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestTableShowsEachWorkload: the verdict table has attempted,
// acknowledged and failed operations per workload, so key and DDL
// operations are not counted as attempted and missing from acknowledged,
// the replica moves with how they ended, and the partitions made and
// dropped.
func TestTableShowsEachWorkload(t *testing.T) {
	v := Verdict{Scenario: "kill-leader", Seed: 3, Duration: 30 * time.Second,
		Log: LogResult{Attempted: 1000, Acknowledged: 990, Failed: 10},
		KV:  newKVResult(200, 5, 198), DDL: newKVResult(40, 4, 38),
		Moves:      MoveResult{Started: 12, Completed: 9, Cancelled: 3, Failed: 2},
		Partitions: PartitionResult{Explicit: 4, OnWrite: 5, Dropped: 6}}
	v.Log.Excluded = 77
	v.KV.Linearizable, v.DDL.Linearizable = true, true
	lines := strings.Split(strings.TrimRight(Table([]Verdict{v}), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("table of one verdict:\n%s", strings.Join(lines, "\n"))
	}
	row := map[string]string{}
	header, values := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(header) != len(values) {
		t.Fatalf("%d columns, %d values:\n%s", len(header), len(values), strings.Join(lines, "\n"))
	}
	for i, h := range header {
		row[h] = values[i]
	}
	for col, want := range map[string]string{
		"LOG-ATT": "1000", "LOG-ACK": "990", "LOG-FAIL": "10",
		"KEY-ATT": "200", "KEY-ACK": "195", "KEY-FAIL": "5",
		"DDL-ATT": "40", "DDL-ACK": "36", "DDL-FAIL": "4",
		"CHECKED": "236", "LINEAR": "true",
		"MV-START": "12", "MV-DONE": "9", "MV-BACK": "3", "MV-FAIL": "2", "MV-LEFT": "0",
		"PT-EXPL": "4", "PT-WRITE": "5", "PT-DROP": "6", "PT-EXCL": "77",
	} {
		if row[col] != want {
			t.Errorf("%s = %q, want %s:\n%s", col, row[col], want, strings.Join(lines, "\n"))
		}
	}
}
