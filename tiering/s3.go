package tiering

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/pkgerr"
)

// S3 is an ObjectStore in an S3 bucket, through minio-go. Put is one PUT up
// to PartSize bytes and a multipart upload above (aborted if it fails), so
// the object appears whole or not at all.
type S3 struct {
	client   *minio.Client
	core     minio.Core // the same client, for the calls that answer at once
	endpoint string
	bucket   string
	prefix   string // "" or Prefix and a slash
	partSize int64
	unsigned bool
}

var _ ObjectStore = (*S3)(nil)

// s3Attempts is how often minio-go sends one request: once. The
// ObjectStore's callers retry with backoff; minio-go's own retries (ten by
// default, backing off up to a second) would stack below theirs.
const s3Attempts = 1

// NewS3 opens the store cfg describes and checks that its bucket exists
// (creating it with CreateBucket). ctx bounds that check only.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	access, secret := cfg.AccessKey, cfg.SecretKey
	if access == "" && secret == "" {
		access, secret = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(access, secret, ""),
		Secure:       cfg.Secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   s3Attempts,
	})
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "s3 %s: %w", cfg.Endpoint, err)
	}
	s := &S3{
		client:   client,
		core:     minio.Core{Client: client},
		endpoint: cfg.Endpoint,
		bucket:   cfg.Bucket,
		partSize: cfg.PartSize,
		unsigned: cfg.UnsignedPayload,
	}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	if s.partSize == 0 {
		s.partSize = defaultPartSize
	}
	if err := s.checkBucket(ctx, cfg.Region, cfg.CreateBucket); err != nil {
		return nil, err
	}
	return s, nil
}

// checkBucket makes sure the bucket is there, creating it if create says
// so. A transient failure (the server unreachable, a 5xx such as
// InternalError or SlowDown: versitygw answers InternalError to one of
// several nodes creating the bucket at once) is retried with backoff until
// ctx ends; a refusal (denied, a bad name, the bucket missing without
// create) is returned at once.
func (s *S3) checkBucket(ctx context.Context, region string, create bool) error {
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: true}
	for {
		err := s.checkBucketOnce(ctx, region, create)
		if err == nil || !transientS3(err) {
			return err
		}
		if !retry.Wait(ctx) {
			return fmt.Errorf("%w (retried until %v)", err, context.Cause(ctx))
		}
	}
}

func (s *S3) checkBucketOnce(ctx context.Context, region string, create bool) error {
	exists, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return pkgerr.Errorf("tiering", "s3 %s: bucket %s: %w", s.endpoint, s.bucket, err)
	}
	if exists {
		return nil
	}
	if !create {
		return fmt.Errorf("%w: %s at %s (create it, or set CreateBucket)", ErrNoBucket, s.bucket, s.endpoint)
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if err != nil && errorCode(err) != "BucketAlreadyOwnedByYou" { // made meanwhile by another node
		return pkgerr.Errorf("tiering", "s3 %s: create bucket %s: %w", s.endpoint, s.bucket, err)
	}
	return nil
}

// String names the store: "s3://bucket/prefix".
func (s *S3) String() string { return "s3://" + s.bucket + "/" + s.prefix }

// object is the bucket's name for the object key, once the key is checked.
func (s *S3) object(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if len(s.prefix)+len(key) > maxKeyBytes {
		return "", fmt.Errorf("%w: %q: %d bytes with the store's prefix, S3 takes %d", ErrInvalidKey, key, len(s.prefix)+len(key), maxKeyBytes)
	}
	return s.prefix + key, nil
}

// Put stores size bytes of r as the object key.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if err := checkPut(size); err != nil {
		return pkgerr.Errorf("tiering", "s3 put %s: %w", key, err)
	}
	_, err = s.client.PutObject(ctx, s.bucket, name, newExactReader(r, size), size, minio.PutObjectOptions{
		PartSize:             uint64(s.partSize),
		DisableContentSha256: s.unsigned,
		ContentType:          "application/octet-stream",
	})
	if err != nil {
		return s.fail("put", key, err)
	}
	return nil
}

// PresignGet returns a URL that GETs the object key until expiry passes
// (at most 7 days, S3's limit). It does not check that the object exists:
// the GET finds out.
func (s *S3) PresignGet(ctx context.Context, key string, expiry time.Duration) (string, error) {
	name, err := s.object(key)
	if err != nil {
		return "", err
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, name, expiry, nil)
	if err != nil {
		return "", s.fail("presign", key, err)
	}
	return u.String(), nil
}
