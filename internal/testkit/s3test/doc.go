// Package s3test gives tests an S3 bucket of their own, for tiering's S3
// store and for anything built on it, in any package.
//
//   - [Fake] serves a bucket from gofakes3, in memory, in the test process:
//     always there, fast, and loose (no signature checks, no part-size
//     limits). Tests that must run everywhere use it.
//   - [Server] is a real S3 server the tests of a package share: the one
//     FLOE_TEST_S3_ENDPOINT names (with FLOE_TEST_S3_ACCESS_KEY,
//     FLOE_TEST_S3_SECRET_KEY and, optionally, FLOE_TEST_S3_REGION), else
//     a versitygw started on first use if one is on PATH, else none, and
//     the test is skipped saying how to get one. Its Bucket makes a fresh
//     bucket for each test and removes it after.
//
// A versitygw the Server started runs until the package's TestMain calls
// Close, which also removes its folder. On Linux the kernel kills it too
// when the test process dies first (a panic, a timeout), so it never
// outlives the tests; its folder (in the temporary directory, named
// floe-versitygw-*) is then left behind.
//
// The package imports no testing package, as production packages do not
// (a test checks that); its helpers take a [T], which *testing.T and
// *testing.B satisfy.
package s3test
