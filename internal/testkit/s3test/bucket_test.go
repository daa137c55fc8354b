package s3test

import (
	"strings"
	"testing"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

func TestBucketNameIsValid(t *testing.T) {
	for _, name := range []string{
		"TestX",
		"TestObjectStoreContract/s3-real/FailedPut/large-short",
		"Test_Under_Scores#01",
		"/",
		strings.Repeat("VeryLong", 40),
	} {
		got := bucketName(name)
		if err := s3utils.CheckValidBucketNameStrict(got); err != nil {
			t.Errorf("bucketName(%q) = %q: %v", name, got, err)
		}
		if bucketName(name) == got {
			t.Errorf("bucketName(%q) twice gave %q both times", name, got)
		}
	}
	if got := bucketName("TestObjectStoreContract/s3-real/RoundTrip"); !strings.Contains(got, "s3-real-roundtrip") {
		t.Errorf("bucket name %q does not end with the test's own name", got)
	}
}
