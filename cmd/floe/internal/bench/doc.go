// Package bench is the engine of `floe bench`: the load benchmarks
// (Produce, E2E, Upsert, Lookup, and RunSuite, which runs them in turn in
// the peer kit's shape), the comparison of a suite run with the peers'
// (Compare), and the benchmarks of the machine and of one node: Floor
// (what the disk and an idle round trip allow), Density (what idle tables
// cost) and Hostile (hostile requests while a client writes).
//
// Latencies are kept per caller in bounded reservoirs and merged at the
// end; CPU time is the benchmark's own and, for nodes on this machine
// (Options.NodePIDs), theirs, per operation.
//
// The floe command parses flags into these options and prints the
// results; a benchmark writes only to the writers it is given.
package bench
