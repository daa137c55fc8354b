package tiering

import (
	"errors"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/floedb/floe/internal/pkgerr"
)

// S3Config says where an S3 store keeps its objects. The zero value is not
// usable: Endpoint and Bucket are required.
type S3Config struct {
	// Endpoint is the server's host and port, without a scheme:
	// "s3.eu-west-1.amazonaws.com", "127.0.0.1:7070".
	Endpoint string
	// Region signs the requests ("us-east-1"). Empty: asked of the server
	// (a bucket-location request, once per store).
	Region string
	// Bucket holds the objects.
	Bucket string
	// Prefix, if set, is a key prefix inside the bucket, a path like a key
	// ("floe/cluster-1", no leading or trailing slash): the object "k" is
	// stored as "floe/cluster-1/k", and List sees only the objects below
	// it. Several clusters can share a bucket this way.
	Prefix string
	// PathStyle addresses the bucket in the path (http://host/bucket/key),
	// as most servers other than AWS want. False: minio-go picks, the
	// bucket's own host name (http://bucket.host/key) for AWS and the
	// providers it knows, the path for the rest.
	PathStyle bool
	// Secure speaks TLS (https), verified against the system's roots.
	Secure bool
	// AccessKey and SecretKey sign the requests. Both empty: taken from
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY when NewS3 runs; still
	// empty, requests go unsigned (anonymous).
	AccessKey string
	SecretKey string
	// CreateBucket makes NewS3 create the bucket if it does not exist
	// (else a missing bucket is ErrNoBucket).
	CreateBucket bool
	// UnsignedPayload sends object bytes without a signature over them when
	// not Secure (over TLS they never carry one). By default minio-go signs
	// plain-HTTP uploads in chunks (aws-chunked, "STREAMING-AWS4-HMAC-
	// SHA256-PAYLOAD"), which some S3 look-alikes, gofakes3 among them,
	// store undecoded in multipart parts.
	UnsignedPayload bool
	// PartSize is the size of one part of a multipart upload, and so the
	// memory one Put holds: objects larger than it go up in parts, one at
	// a time. Zero: 16 MiB. S3 takes 5 MiB to 5 GiB.
	PartSize int64
}

const (
	defaultPartSize = 16 << 20
	minPartSize     = 5 << 20
	maxPartSize     = 5 << 30
)

// ErrNoBucket: the S3 bucket does not exist (and S3Config.CreateBucket is
// not set).
var ErrNoBucket = pkgerr.New("tiering", "s3 bucket does not exist")

// Validate checks the configuration without reaching the server.
func (c S3Config) Validate() error {
	var errs []error
	switch {
	case c.Endpoint == "":
		errs = append(errs, errors.New("endpoint missing"))
	case strings.Contains(c.Endpoint, "://") || strings.Contains(c.Endpoint, "/"):
		errs = append(errs, fmt.Errorf("endpoint %q: want host:port, no scheme or path (Secure picks https)", c.Endpoint))
	}
	if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		errs = append(errs, fmt.Errorf("bucket %q: %w", c.Bucket, err))
	}
	if c.Prefix != "" && ValidateKey(c.Prefix) != nil {
		errs = append(errs, fmt.Errorf("prefix %q: want a key-like path, no leading or trailing slash", c.Prefix))
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		errs = append(errs, errors.New("access key and secret key: set both or neither"))
	}
	if c.PartSize != 0 && (c.PartSize < minPartSize || c.PartSize > maxPartSize) {
		errs = append(errs, fmt.Errorf("part size %d not in [%d, %d]", c.PartSize, minPartSize, maxPartSize))
	}
	if err := errors.Join(errs...); err != nil {
		return pkgerr.Errorf("tiering", "s3 config: %w", err)
	}
	return nil
}
