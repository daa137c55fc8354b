package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTableElect drives `floe table elect` against a real cluster: refusals
// are typed, and a clean election moves leadership back to the preferred
// replica once it is in sync again after a restart.
func TestTableElect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	mustCLI := c.MustCLI
	mustCLI("db", "create", "db")
	mustCLI("table", "create", "db.t", "--schema", "id BIGINT NOT NULL", "--buckets", "1", "--replication", "3")

	type bucket struct {
		Replicas         []uint32 `json:"replicas"`
		Leader           uint32   `json:"leader"`
		LeaderEpoch      int32    `json:"leader_epoch"`
		ISR              []uint32 `json:"isr"`
		Status           string   `json:"status"`
		UncleanElections int32    `json:"unclean_elections"`
	}
	describe := func() bucket {
		var desc struct {
			Placement []bucket `json:"placement"`
		}
		c.CLIJSON(&desc, "table", "describe", "db.t")
		return desc.Placement[0]
	}
	b := describe()
	if b.Status != "online" || b.Leader != b.Replicas[0] || len(b.ISR) != 3 {
		t.Fatalf("new bucket: %+v", b)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "elect", "db.t"}, "already exists"},
		{[]string{"table", "elect", "db.t", "--bucket", "3"}, "no bucket 3"},
		{[]string{"table", "elect", "db.nope", "--unclean"}, "unknown table"},
	} {
		if _, errOut, code := c.CLI(tc.args...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Fatalf("floe %s: exit %d, %q; want exit 1 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}

	preferred := c.Nodes[b.Replicas[0]-1]
	c.Stop(preferred)
	waitFor(t, 30*time.Second, "leadership to move", func() bool {
		b = describe()
		return b.Leader != 0 && b.Leader != preferred.ID
	})
	c.Restart(preferred)
	waitFor(t, 60*time.Second, "the restarted replica back in the ISR", func() bool {
		b = describe()
		return slices.Contains(b.ISR, preferred.ID)
	})
	out := mustCLI("table", "elect", "db.t", "--bucket", "0")
	after := describe()
	if after.Leader != preferred.ID || after.LeaderEpoch <= b.LeaderEpoch || after.UncleanElections != 0 ||
		out != fmt.Sprintf("bucket 0: leader %d, epoch %d\n", preferred.ID, after.LeaderEpoch) {
		t.Fatalf("elect printed %q; bucket %+v (before %+v)", out, after, b)
	}
}
