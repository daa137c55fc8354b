#!/usr/bin/env bash
# Regenerates the Go and DRPC code of the .proto files here. Run through
# `go generate ./transport/pb` (or `go generate ./...`). The generators are
# pinned by go.mod's tool directives; protoc is Debian's protobuf-compiler,
# whose version the generated headers record.
set -euo pipefail
cd "$(dirname "$0")"
want="libprotoc 3.21.12"
if ! command -v protoc >/dev/null; then
  echo "gen.sh: protoc not found; install it with: apt-get install protobuf-compiler" >&2
  exit 1
fi
if [ "$(protoc --version)" != "$want" ]; then
  echo "gen.sh: want $want (Debian 12's protobuf-compiler), have $(protoc --version)" >&2
  exit 1
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$bin/protoc-gen-go-drpc" storj.io/drpc/cmd/protoc-gen-go-drpc
PATH="$bin:$PATH" protoc -I . \
  --go_out=. --go_opt=paths=source_relative \
  --go-drpc_out=. --go-drpc_opt=paths=source_relative \
  ./*.proto
