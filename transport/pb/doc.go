// Package pb holds Floe's protobuf messages and DRPC services: the Meta
// service (catalog, cluster formation, administration), the metadata state
// machine's commands and records, and the error codes every call carries.
//
// The .proto files are the source; the *.pb.go and *_drpc.pb.go files beside
// them are generated and committed. Regenerate with `go generate ./...`
// (needs Debian's protobuf-compiler, protoc 3.21.12; the Go generators are
// pinned in go.mod's tool directives).
package pb

//go:generate bash gen.sh
