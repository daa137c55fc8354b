module github.com/floedb/floe

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	golang.org/x/sys v0.50.0
	pgregory.net/rapid v1.3.0
)
