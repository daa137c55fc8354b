package tiering

import (
	"context"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/floedb/floe/internal/pkgerr"
)

// Get reads length bytes of the object key from offset on (length < 0: to
// the end).
//
// minio-go's Client.GetObject is lazy: it sends nothing until the first
// Read, so a missing object would surface there. Get uses Core.GetObject
// instead, which sends the GET at once, and so returns ErrNotFound itself;
// the body it returns streams the range.
func (s *S3) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	if err := checkGet(offset); err != nil {
		return nil, pkgerr.Errorf("tiering", "s3 get %s: %w", key, err)
	}
	if length == 0 {
		// No range names zero bytes; what is left to say is whether the
		// object is there.
		if _, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{}); err != nil {
			return nil, s.fail("get", key, err)
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	var opts minio.GetObjectOptions
	switch {
	case length > 0:
		err = opts.SetRange(offset, offset+length-1)
	case offset > 0:
		err = opts.SetRange(offset, 0)
	}
	if err != nil {
		return nil, pkgerr.Errorf("tiering", "s3 get %s: %w", key, err)
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, name, opts)
	if errorCode(err) == minio.InvalidRange {
		// The range starts at or past the end (of an object that exists:
		// a missing one is NoSuchKey first).
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	return body, nil
}

// Stat describes the object key.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	name, err := s.object(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, s.fail("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, Modified: info.LastModified}, nil
}
