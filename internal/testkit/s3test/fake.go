package s3test

import (
	"net/http/httptest"

	"github.com/floedb/floe/tiering"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Fake starts an in-memory gofakes3 server for t, with one empty bucket,
// and returns the configuration that reaches it; the server stops when t
// ends.
//
// The configuration sets UnsignedPayload, so minio-go sends plain bodies:
// gofakes3 (v1.2.0) decodes aws-chunked bodies, minio-go's signed uploads
// over plain HTTP, for a single PUT but not for the parts of a multipart
// upload, which it stores with their chunk headers in, and it refuses an
// empty one (MissingContentLength).
func Fake(t T) tiering.S3Config {
	t.Helper()
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	bucket := bucketName(t.Name())
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatalf("s3test: gofakes3 bucket %s: %v", bucket, err)
	}
	return tiering.S3Config{
		Endpoint:        srv.Listener.Addr().String(),
		Region:          defaultRegion,
		Bucket:          bucket,
		PathStyle:       true,
		AccessKey:       "fake-access",
		SecretKey:       "fake-secret",
		UnsignedPayload: true,
	}
}
