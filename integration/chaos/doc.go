// Package chaos runs a Floe cluster of the built binary under faults and
// checks what its users rely on, the way Jepsen checks its peers: no
// acknowledged record lost, none duplicated or reordered, replicas equal
// below the high watermark, keys linearizable.
//
// Start launches N nodes as processes, each in a network namespace of its
// own, joined to the test's namespace by a veth pair and routed through it
// (so iptables rules there cut any pair of nodes apart, one way or both,
// and tc netem adds latency and loss to one node's link). The Cluster
// kills, pauses, restarts and wipes nodes, partitions and heals the
// network, flips bits and tears tails in segment files, and fills a
// node's disk (a size-limited tmpfs under its data folder). With
// Options.Containers each node is a Docker container instead, on a bridge
// network of the cluster's own whose traffic the same iptables chain
// filters (see docker.go). Close undoes everything it set up, even after
// a failed test.
//
// A Workload drives operations against the cluster while a Scenario
// injects faults on a schedule drawn from a seed; the checkers read the
// history and the cluster afterwards and a Verdict sums it up. A run that
// fails writes its seed, fault schedule and history to a file, which
// -chaos.replay runs again.
//
// Network namespaces, iptables and tmpfs mounts need root; Available says
// whether this machine can run the suite.
package chaos
