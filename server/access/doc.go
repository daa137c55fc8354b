// Package access decides who may make which call: the table that maps every
// RPC to the operation it is and the resource it touches (rules.go), the
// ACL policy that allows or denies a principal an operation on a resource
// (policy.go), and the transport.Authorizer that a node's handler chain
// asks on every call (authorizer.go).
//
// # Resources and operations
//
// Resources form a tree: the cluster › a database › a table ("db.t"). An
// ACL entry on a database covers its tables; one on the cluster covers
// everything. Names match literally, or by prefix. Operations are read,
// write, create, drop, alter, describe, cluster-admin and all; read, write,
// create, drop and alter imply describe of the same resource (a writer may
// look its table up).
//
// # Decisions
//
// Nodes of the cluster may make every call: they are the cluster. Every
// other principal is checked:
//
//  1. RPCs for nodes only (Raft membership, metadata proposals and watch,
//     ISR changes, tiering commits, follower fetches) are refused to
//     anybody else, whatever the ACLs say.
//  2. With authorization off, any authenticated principal may make any
//     other call.
//  3. With authorization on, super-users (configuration) may make every
//     call; for anybody else a matching deny entry refuses, a matching
//     allow entry allows, and no match refuses.
package access
