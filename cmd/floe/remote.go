package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/floedb/floe/server"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// remoteFlags are the flags that choose the remote storage tiering moves
// sealed log segments to: a folder, or an S3 bucket.
type remoteFlags struct {
	dir                  *string
	endpoint, bucket     *string
	region, prefix       *string
	pathStyle, secure    *bool
	accessKey, secretKey *string
	secretKeyFile        *string
	createBucket         *bool
	interval             *time.Duration
	s3                   bool // the S3 flags are defined
}

// defineRemoteFlags adds --remote-dir and --tiering-interval and, with s3,
// the --s3-* flags.
func defineRemoteFlags(fs *flag.FlagSet, dirHelp string, s3 bool) *remoteFlags {
	f := &remoteFlags{s3: s3}
	f.dir = fs.String("remote-dir", "", dirHelp)
	f.interval = fs.Duration("tiering-interval", server.DefaultTieringInterval,
		"how often bucket leaders upload sealed segments to remote storage and apply remote retention")
	if s3 {
		f.endpoint = fs.String("s3-endpoint", "", "S3 server as host:port (MinIO, any S3): tier sealed log segments to --s3-bucket there")
		f.bucket = fs.String("s3-bucket", "", "S3 bucket for remote log segments (with --s3-endpoint)")
		f.region = fs.String("s3-region", "", "S3 region (default: asked of the server)")
		f.prefix = fs.String("s3-prefix", "", "key prefix inside the bucket, so clusters can share one (\"floe/prod\")")
		f.pathStyle = fs.Bool("s3-path-style", false, "address the bucket in the path (http://host/bucket/key), as MinIO and most non-AWS servers want")
		f.secure = fs.Bool("s3-tls", false, "speak TLS (https) to the S3 server")
		f.accessKey = fs.String("s3-access-key", "", "S3 access key (default: $AWS_ACCESS_KEY_ID)")
		f.secretKeyFile = fs.String("s3-secret-key-file", "", "file whose first line is the S3 secret key (default: $AWS_SECRET_ACCESS_KEY); never on the command line")
		f.secretKey = fs.String("s3-secret-key", "", "refused: a secret on the command line shows in ps and /debug/pprof/cmdline; use --s3-secret-key-file or $AWS_SECRET_ACCESS_KEY")
		f.createBucket = fs.Bool("s3-create-bucket", false, "create --s3-bucket when it does not exist")
	}
	return f
}

// open returns the chosen store: --remote-dir, the S3 flags, or, when
// neither is given, a folder at defaultDir ("": no remote storage).
func (f *remoteFlags) open(ctx context.Context, defaultDir string) (tiering.ObjectStore, error) {
	if *f.interval <= 0 {
		return nil, fmt.Errorf("%w: --tiering-interval must be positive", errUsage)
	}
	useS3 := f.s3 && (*f.endpoint != "" || *f.bucket != "")
	switch {
	case useS3 && *f.dir != "":
		return nil, fmt.Errorf("%w: give --remote-dir or --s3-endpoint, not both", errUsage)
	case f.s3 && *f.secretKey != "":
		return nil, fmt.Errorf("%w: --s3-secret-key would show the secret in ps and /debug/pprof/cmdline: put it in a file (--s3-secret-key-file) or in AWS_SECRET_ACCESS_KEY", errUsage)
	case useS3:
		cfg := tiering.S3Config{Endpoint: *f.endpoint, Bucket: *f.bucket, Region: *f.region, Prefix: *f.prefix,
			PathStyle: *f.pathStyle, Secure: *f.secure, AccessKey: *f.accessKey,
			CreateBucket: *f.createBucket}
		if *f.secretKeyFile != "" {
			secret, err := readSecretFile(*f.secretKeyFile, "--s3-secret-key-file")
			if err != nil {
				return nil, err
			}
			cfg.SecretKey = secret
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: S3 remote storage: %v", errUsage, err)
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return tiering.NewS3(ctx, cfg)
	case *f.dir != "":
		return tiering.NewFolder(*f.dir)
	case defaultDir != "":
		return tiering.NewFolder(defaultDir)
	}
	return nil, nil
}

// lakeCatalogTokenEnv holds the --lake-catalog's bearer token when no
// --lake-catalog-token-file is given.
const lakeCatalogTokenEnv = "FLOE_LAKE_CATALOG_TOKEN"

// openLakeCatalog is the --lake-catalog, nil when none is given; the
// token comes from the file, else from envToken.
func openLakeCatalog(uri, warehouse, tokenFile, envToken string) (*lake.RESTCatalog, error) {
	if uri == "" {
		if warehouse != "" || tokenFile != "" {
			return nil, fmt.Errorf("%w: --lake-catalog-warehouse and --lake-catalog-token-file need --lake-catalog", errUsage)
		}
		return nil, nil
	}
	token := envToken
	if tokenFile != "" {
		var err error
		if token, err = readSecretFile(tokenFile, "--lake-catalog-token-file"); err != nil {
			return nil, err
		}
	}
	cat, err := lake.NewRESTCatalog(uri, warehouse, token)
	if err != nil {
		return nil, fmt.Errorf("%w: --lake-catalog: %v", errUsage, err)
	}
	return cat, nil
}
