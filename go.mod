module github.com/floedb/floe

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	golang.org/x/sys v0.50.0
	google.golang.org/protobuf v1.36.12
	pgregory.net/rapid v1.3.0
	storj.io/drpc v1.0.0
)

require github.com/zeebo/errs v1.2.2 // indirect

replace github.com/hashicorp/go-metrics => github.com/hashicorp/go-metrics v0.6.1

tool (
	google.golang.org/protobuf/cmd/protoc-gen-go
	storj.io/drpc/cmd/protoc-gen-go-drpc
)
