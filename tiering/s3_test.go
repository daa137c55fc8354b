package tiering_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floedb/floe/internal/testkit/s3test"
	"github.com/floedb/floe/tiering"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The S3 store's own rules, beyond the contract.

func TestS3ConfigValidate(t *testing.T) {
	good := tiering.S3Config{Endpoint: "127.0.0.1:7070", Bucket: "floe-remote"}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*tiering.S3Config)
	}{
		{"no endpoint", func(c *tiering.S3Config) { c.Endpoint = "" }},
		{"scheme", func(c *tiering.S3Config) { c.Endpoint = "http://127.0.0.1:7070" }},
		{"path", func(c *tiering.S3Config) { c.Endpoint = "127.0.0.1:7070/b" }},
		{"no bucket", func(c *tiering.S3Config) { c.Bucket = "" }},
		{"bucket name", func(c *tiering.S3Config) { c.Bucket = "Floe_Remote" }},
		{"prefix slash", func(c *tiering.S3Config) { c.Prefix = "floe/" }},
		{"prefix dots", func(c *tiering.S3Config) { c.Prefix = "../floe" }},
		{"access key alone", func(c *tiering.S3Config) { c.AccessKey = "a" }},
		{"secret key alone", func(c *tiering.S3Config) { c.SecretKey = "s" }},
		{"part too small", func(c *tiering.S3Config) { c.PartSize = 1 << 20 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := good
			c.edit(&cfg)
			if err := cfg.Validate(); err == nil {
				t.Fatalf("%+v validates", cfg)
			}
			if _, err := tiering.NewS3(t.Context(), cfg); err == nil {
				t.Fatalf("NewS3(%+v) succeeded", cfg)
			}
		})
	}
}

func TestS3MissingBucket(t *testing.T) {
	cfg := s3test.Fake(t)
	cfg.Bucket = "floe-not-there"
	_, err := tiering.NewS3(t.Context(), cfg)
	if !errors.Is(err, tiering.ErrNoBucket) || !strings.Contains(err.Error(), cfg.Bucket) || !strings.Contains(err.Error(), cfg.Endpoint) {
		t.Fatalf("NewS3 without its bucket: %v, want ErrNoBucket naming bucket and endpoint", err)
	}
	cfg.CreateBucket = true
	s, err := tiering.NewS3(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "v")
	if _, err := tiering.NewS3(t.Context(), cfg); err != nil {
		t.Fatalf("CreateBucket with the bucket there: %v", err)
	}
}

// TestS3GetMissingAtOnce: Get itself, not the first Read, says an object is
// missing (the store does not use minio-go's lazy GetObject).
func TestS3GetMissingAtOnce(t *testing.T) {
	s := openS3(t, s3test.Fake(t))
	for _, r := range [][2]int64{{0, -1}, {2, 3}, {0, 0}} {
		if _, err := s.Get(t.Context(), "missing", r[0], r[1]); !errors.Is(err, tiering.ErrNotFound) {
			t.Errorf("get(%d, %d) = %v, want ErrNotFound from Get", r[0], r[1], err)
		}
	}
}

func TestS3PrefixesShareABucket(t *testing.T) {
	cfg := s3test.Fake(t)
	whole := openS3(t, cfg)
	stores := map[string]*tiering.S3{}
	for _, prefix := range []string{"floe/a", "floe/ab"} {
		c := cfg
		c.Prefix = prefix
		stores[prefix] = openS3(t, c)
		put(t, stores[prefix], "k", "k")
	}
	put(t, whole, "floe/a-k", "floe/a-k")
	for prefix, s := range stores {
		if got := listKeys(t, s, ""); !slices.Equal(got, []string{"k"}) {
			t.Errorf("store %s lists %q, want [k]", prefix, got)
		}
		if err := s.Delete(t.Context(), "k"); err != nil {
			t.Error(err)
		}
	}
	if got := listKeys(t, whole, ""); !slices.Equal(got, []string{"floe/a-k"}) {
		t.Fatalf("bucket holds %q after each prefix deleted its own", got)
	}
	if got := stores["floe/a"].String(); got != "s3://"+cfg.Bucket+"/floe/a/" {
		t.Fatalf("String() = %q", got)
	}
}

// TestS3LargeIsMultipart: an object above PartSize goes up in parts (S3's
// ETag of a multipart object ends in "-" and the part count). It needs the
// real server: gofakes3 gives a multipart object the MD5 of its bytes.
func TestS3LargeIsMultipart(t *testing.T) {
	cfg := s3server.Bucket(t)
	s := openS3(t, cfg)
	data := largeData(largeSize)
	if err := s.Put(t.Context(), "big", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := client.StatObject(t.Context(), cfg.Bucket, "big", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(info.ETag, "-3") {
		t.Fatalf("ETag %q: want a multipart upload of 3 parts", info.ETag)
	}
}

// TestS3CredentialsFromEnvironment needs a server that checks signatures.
func TestS3CredentialsFromEnvironment(t *testing.T) {
	cfg := s3server.Bucket(t)
	access, secret := cfg.AccessKey, cfg.SecretKey
	cfg.AccessKey, cfg.SecretKey = "", ""
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	s := openS3(t, cfg)
	put(t, s, "k", "signed with the environment's keys")

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	if _, err := tiering.NewS3(t.Context(), cfg); err == nil {
		t.Fatal("NewS3 with a wrong secret from the environment succeeded")
	}
}

// TestS3CreateBucketRetriesTransientErrors: a server answering
// InternalError to CreateBucket (versitygw does to one of several nodes
// creating the bucket at once; a chaos run's node exited on it at start) is
// asked again until it succeeds, while a refusal (AccessDenied) comes back
// at once.
func TestS3CreateBucketRetriesTransientErrors(t *testing.T) {
	cfg := s3test.Fake(t)
	var creates atomic.Int32
	answer := func(status int, code string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, code)
		}
	}
	var fail func(w http.ResponseWriter)
	target := &url.URL{Scheme: "http", Host: cfg.Endpoint}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// CreateBucket is a PUT of the bucket itself, path style.
		if r.Method == http.MethodPut && strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0 && r.URL.RawQuery == "" {
			if creates.Add(1) <= 3 && fail != nil {
				fail(w)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg.Endpoint = srv.Listener.Addr().String()
	cfg.CreateBucket = true

	fail = answer(http.StatusInternalServerError, "InternalError")
	cfg.Bucket = "floe-created-late"
	s, err := tiering.NewS3(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewS3 with CreateBucket failing 3 times with InternalError: %v", err)
	}
	if n := creates.Load(); n != 4 {
		t.Fatalf("CreateBucket sent %d times, want 4 (3 failures, then the one that made it)", n)
	}
	put(t, s, "k", "v")

	creates.Store(0)
	fail = answer(http.StatusForbidden, "AccessDenied")
	cfg.Bucket = "floe-denied"
	if _, err := tiering.NewS3(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("NewS3 with CreateBucket denied: %v, want the refusal", err)
	}
	if n := creates.Load(); n != 1 {
		t.Fatalf("a denied CreateBucket was sent %d times, want 1", n)
	}
}
