package s3test

import "context"

// T is what the helpers need of a test: *testing.T and *testing.B have it.
type T interface {
	Helper()
	Name() string
	Context() context.Context
	Cleanup(func())
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
}
