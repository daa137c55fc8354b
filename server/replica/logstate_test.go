package replica

import (
	"errors"
	"testing"
)

// TestLogState: a replica reports its log's latest epoch and end whatever
// its role, the end after a cut too; a bucket the node holds no replica of,
// or whose log failed, reports nothing.
func TestLogState(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	if st, ok := m.LogState(testBucket); ok {
		t.Fatalf("no replica: %+v", st)
	}
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	check := func(what string, want LogState) {
		t.Helper()
		if st, ok := m.LogState(testBucket); !ok || st != want {
			t.Fatalf("%s: %+v %v, want %+v", what, st, ok, want)
		}
	}
	check("empty", LogState{LatestEpoch: -1, EndOffset: 0})
	lead(r, 3)
	produceLeader(t, r, writerBatchN(t, 1, 0, 2, "x"))
	produceLeader(t, r, writerBatchN(t, 1, 1, 3, "y"))
	check("after 5 records in epoch 3", LogState{LatestEpoch: 3, EndOffset: 5})
	r.produceMu.Lock()
	err := r.log.Truncate(2)
	r.produceMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	check("cut back to 2", LogState{LatestEpoch: 3, EndOffset: 2})
	r.mu.Lock()
	r.failed = errors.New("test: the log failed")
	r.mu.Unlock()
	if st, ok := m.LogState(testBucket); ok {
		t.Fatalf("failed log: %+v", st)
	}
}
