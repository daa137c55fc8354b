package s3test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"

	"github.com/floedb/floe/tiering"
)

// defaultRegion is the region of test servers that name none.
const defaultRegion = "us-east-1"

// The environment that names an S3 server for the tests.
const (
	envEndpoint  = "FLOE_TEST_S3_ENDPOINT"
	envAccessKey = "FLOE_TEST_S3_ACCESS_KEY"
	envSecretKey = "FLOE_TEST_S3_SECRET_KEY"
	envRegion    = "FLOE_TEST_S3_REGION"
)

// skipNoServer is the skip message of a test that found no real S3.
const skipNoServer = "s3test: no S3 server for this test: set " + envEndpoint +
	" (with " + envAccessKey + " and " + envSecretKey + "), or put versitygw on PATH: " +
	"go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Server is the real S3 server the tests of a package share (see the
// package doc for which). Declare one per package and close it in TestMain:
//
//	var s3server s3test.Server
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		if err := s3server.Close(); err != nil {
//			fmt.Fprintln(os.Stderr, "closing the S3 server:", err)
//		}
//		os.Exit(code)
//	}
//
// Its methods are safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	resolved bool
	closed   bool
	base     tiering.S3Config // the server, without a bucket
	gw       *gateway         // the versitygw started, if any
	err      error            // the start's, returned to every caller
}

var errServerClosed = errors.New("s3test: server closed")

// Bucket returns the configuration of a fresh, empty bucket on the server,
// removed (emptied first) when t ends. Without a server it skips t; a
// server that fails to start fails t (and every later test: a broken start
// is not tried again).
func (s *Server) Bucket(t T) tiering.S3Config {
	t.Helper()
	base, err := s.resolve(t.Context())
	if errors.Is(err, errNoServer) {
		t.Skip(skipNoServer)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	cfg := base
	cfg.Bucket = bucketName(t.Name())
	makeBucket(t, cfg)
	return cfg
}

var errNoServer = errors.New("s3test: no S3 server")

// resolve finds the server on the first call (starting versitygw if it is
// the one); ctx bounds that start.
func (s *Server) resolve(ctx context.Context) (tiering.S3Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return tiering.S3Config{}, errServerClosed
	}
	if !s.resolved {
		s.resolved = true
		s.base, s.gw, s.err = findServer(ctx)
	}
	return s.base, s.err
}

// findServer picks the server: the environment's, else a versitygw from
// PATH, else errNoServer.
func findServer(ctx context.Context) (tiering.S3Config, *gateway, error) {
	if endpoint := os.Getenv(envEndpoint); endpoint != "" {
		region := os.Getenv(envRegion)
		if region == "" {
			region = defaultRegion
		}
		return serverConfig(endpoint, region, os.Getenv(envAccessKey), os.Getenv(envSecretKey)), nil, nil
	}
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		return tiering.S3Config{}, nil, errNoServer
	}
	gw, err := startGateway(ctx, bin)
	if err != nil {
		return tiering.S3Config{}, nil, err
	}
	return serverConfig(gw.addr, defaultRegion, gatewayAccessKey, gatewaySecretKey), gw, nil
}

// serverConfig reaches a test server: plain HTTP, the bucket in the path.
func serverConfig(endpoint, region, accessKey, secretKey string) tiering.S3Config {
	return tiering.S3Config{
		Endpoint:  endpoint,
		Region:    region,
		PathStyle: true,
		AccessKey: accessKey,
		SecretKey: secretKey,
	}
}

// Close stops the versitygw the Server started, if it did, and removes its
// folder; later calls to Bucket fail their test. Closing twice does
// nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.gw == nil {
		return nil
	}
	return s.gw.close()
}
