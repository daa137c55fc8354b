package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floedb/floe/tiering"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// bucketName is a bucket name no other test (in this process or another on
// the same server) uses: the end of a slug of the test's name, for whoever
// looks at the server, and random bytes.
func bucketName(testName string) string {
	var slug []byte
	for _, c := range []byte(strings.ToLower(testName)) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			slug = append(slug, c)
		case len(slug) > 0 && slug[len(slug)-1] != '-':
			slug = append(slug, '-')
		}
	}
	slug = slug[max(len(slug)-slugBytes, 0):]
	var random [8]byte
	rand.Read(random[:])
	return "floe-" + strings.Trim(string(slug), "-") + "-" + hex.EncodeToString(random[:])
}

// slugBytes is how much of a test's name a bucket name keeps: with
// "floe-", a dash and 16 hex digits, well inside S3's 63 bytes.
const slugBytes = 30

// cleanupTimeout bounds emptying and removing a test's bucket (the test's
// context is over by then).
const cleanupTimeout = 30 * time.Second

// makeBucket creates cfg's bucket and removes it, with what is in it, when
// t ends.
func makeBucket(t T, cfg tiering.S3Config) {
	t.Helper()
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       cfg.Secure,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1, // a server that is not there fails the test at once
	})
	if err != nil {
		t.Fatalf("s3test: client for %s: %v", cfg.Endpoint, err)
	}
	if err := client.MakeBucket(t.Context(), cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
		t.Fatalf("s3test: create bucket %s at %s: %v", cfg.Bucket, cfg.Endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := removeBucket(ctx, client, cfg.Bucket); err != nil {
			t.Logf("s3test: remove bucket %s at %s: %v", cfg.Bucket, cfg.Endpoint, err)
		}
	})
}

// removeBucket deletes every object in the bucket, then the bucket.
func removeBucket(ctx context.Context, client *minio.Client, bucket string) error {
	var errs []error
	objects := client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true})
	for res := range client.RemoveObjects(ctx, bucket, objects, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("%s: %w", res.ObjectName, res.Err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return client.RemoveBucket(ctx, bucket)
}
