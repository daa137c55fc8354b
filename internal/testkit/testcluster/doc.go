// Package testcluster starts real Floe nodes inside a test process, on
// loopback, so that SDK and CLI tests run against the server's own
// semantics (merge engines, batch checks, writer dedupe, high watermarks)
// instead of a copy of them.
//
// Each node runs both roles (meta and tablet) in its own data folder, and
// sits behind a Proxy that every client and every other node goes through:
// it can refuse or cut connections, delay calls, hold the calls of one
// RPC, answer them with an error before or after the node serves them (a
// refusal, a lost acknowledgement), and rewrite an answer (a damaged
// wire). Start waits until every node is registered and alive; CreateTable
// waits until every bucket is served. The cluster's own inspection
// (Records, HighWatermark, Leader) dials the nodes past their proxies, so
// armed faults never catch it.
//
// Starting a cluster takes a few seconds; tests of a package share one
// where they can (a Shared, started on first use and closed by the
// package's TestMain), each test making its own tables.
//
// The package imports no testing package, as production packages do not;
// callers turn its errors into test failures.
package testcluster
