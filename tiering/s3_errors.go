package tiering

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/minio/minio-go/v7"

	"github.com/floedb/floe/internal/pkgerr"
)

// fail wraps an error of the operation op on key, as ErrNotFound if the
// server said the object is not there.
func (s *S3) fail(op, key string, err error) error {
	if isNoSuchKey(err) {
		return pkgerr.Errorf("tiering", "s3 %s %s: %w", op, key, ErrNotFound)
	}
	return pkgerr.Errorf("tiering", "s3 %s %s: %w", op, key, err)
}

// isNoSuchKey reports the server's "no such object": the code NoSuchKey, or
// a 404 without a code that says something else is missing (a HEAD's answer
// has no body, so minio-go names its code from the status).
func isNoSuchKey(err error) bool {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	return resp.Code == minio.NoSuchKey || (resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket && resp.Code != "NoSuchUpload")
}

// errorCode is the S3 error code in err ("" if it has none).
func errorCode(err error) string {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		return resp.Code
	}
	return ""
}

// transientS3 reports whether an S3 call may succeed if sent again as it
// is: the server did not answer (a network error, a timeout), or answered
// with a 5xx or a code that says to slow down or try again. A 4xx refusal
// (denied, bad name, no such bucket) is not, nor is an ended context.
func transientS3(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		var netErr net.Error
		return errors.As(err, &netErr) // no answer from the server
	}
	switch resp.Code {
	case "InternalError", "SlowDown", "ServiceUnavailable", "RequestTimeout", "OperationAborted":
		return true
	}
	return resp.StatusCode >= http.StatusInternalServerError || resp.StatusCode == http.StatusTooManyRequests
}
