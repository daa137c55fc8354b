// Package lakeengines reads the lake tables Floe writes with engines Floe
// did not write: iceberg-go's table scan and DuckDB. It is a module of its
// own, so that neither these engines' dependencies nor DuckDB's CGO reach
// the floe binary; CI runs it after the main module's tests
// (cd integration/lakeengines && go test ./...).
package lakeengines
