package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/floedb/floe/internal/testkit/testcluster"
)

// exampleCluster is the one-node cluster the examples (example_test.go,
// package client_test) run against: a real node in this test process, on
// loopback ports chosen free, started on first use and closed by TestMain.
// The tests share a cluster of their own (shared, three nodes), whose
// faults and restarts the examples' output must not see.
var exampleCluster = testcluster.Shared{Options: testcluster.Options{Nodes: 1}}

// NodeForExamples returns the address of the examples' node, starting it on
// first use. It panics when the node cannot start: an example has no
// *testing.T to fail.
func NodeForExamples() string {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cl, err := exampleCluster.Cluster(ctx)
	if err != nil {
		panic(fmt.Sprintf("starting the examples' node: %v", err))
	}
	return cl.Addrs()[0]
}

// describeSubs prints the scanner's subscriptions, for a test that fails.
func (s *LogScanner) describeSubs() string {
	var b strings.Builder
	for key, sub := range s.subs {
		fmt.Fprintf(&b, "[bucket %d: resolved %v position %d hw %d inflight %v failures %d retry in %v] ",
			key.bucket, sub.resolved, sub.position, sub.hw, sub.inflight, sub.failures, time.Until(sub.retryAt).Round(time.Millisecond))
	}
	return b.String()
}
