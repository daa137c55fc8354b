// Package meta is a node's meta role: the metadata Raft group and what runs
// over it. formation.go forms or joins the cluster; forward.go sends what
// a follower is asked to the leader; service.go, catalog.go,
// controller_service.go, status.go, bucket_status.go and noderemove.go are
// the Meta service's handlers; watch.go serves the metadata stream the
// tablet nodes follow; controller.go and controller_view.go fence nodes
// gossip reports gone; elect_logs.go asks tablet nodes what their logs
// hold before an unclean election; membership.go makes checked voter
// changes.
//
// The node (package server) makes the role with New and what it needs in
// Deps (its listener for Raft's streams, its pool, its discovery of peers
// through Hello, the cluster id, its gossip, its goroutine group and
// stop), serves Service with its own Hello, calls Start on a node with the
// meta role once it listens and RunController once it gossips. The role
// knows nothing of the tablet role: what it needs of it (GetTable's batch
// bound) comes through Deps.
package meta
