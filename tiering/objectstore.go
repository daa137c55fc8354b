package tiering

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// ObjectStore is the remote storage tiering writes to: S3 (any server
// minio-go speaks to) or a local folder. Keys are slash-separated paths
// (see ValidateKey); an object is written whole and never appended to.
//
// Every method is safe for concurrent use. Errors that a retry may cure
// (a timeout, a refused connection, a 5xx) are returned as they come; the
// caller retries with backoff. ErrNotFound and ErrInvalidKey are final.
type ObjectStore interface {
	// Put stores size bytes read from r under key, replacing any object
	// there. A reader never sees a partial object: after Put returns
	// without error the whole object is there, and a failed Put leaves
	// either the previous object or none.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get reads length bytes of the object from offset on (length < 0:
	// to the end). Reading past the end returns what there is. A missing
	// object is ErrNotFound, from Get itself or, for a backend that only
	// learns it then, from the first Read.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Stat describes one object; a missing one is ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List calls fn for every object whose key starts with prefix, in
	// key order, until fn returns an error (which List returns).
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Delete removes the objects; keys that are not there are not an
	// error.
	Delete(ctx context.Context, keys ...string) error
	// PresignGet returns a URL that reads the object with a plain HTTP
	// GET until expiry passes, for clients that read straight from the
	// store. A backend without such URLs (a local folder) returns
	// ErrNoPresign, and the server reads for the client instead.
	PresignGet(ctx context.Context, key string, expiry time.Duration) (string, error)
	// String names the store for logs and errors ("s3://bucket/prefix",
	// "file:///data/remote"); it never includes credentials.
	String() string
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}

var (
	// ErrNotFound: no object under the key.
	ErrNotFound = pkgerr.New("tiering", "object not found")
	// ErrInvalidKey: the key is not a valid object key.
	ErrInvalidKey = pkgerr.New("tiering", "invalid object key")
	// ErrNoPresign: the store cannot hand out presigned URLs.
	ErrNoPresign = pkgerr.New("tiering", "store has no presigned URLs")
)

// maxKeyBytes is S3's limit on a key.
const maxKeyBytes = 1024

// ValidateKey checks an object key: 1 to 1,024 bytes of printable ASCII,
// slash-separated parts that are neither empty, "." nor "..", no leading
// or trailing slash. Keys Floe builds always pass; the check keeps a
// folder store inside its folder whatever it is given.
func ValidateKey(key string) error {
	if key == "" || len(key) > maxKeyBytes {
		return fmt.Errorf("%w: %q: length %d not in [1, %d]", ErrInvalidKey, key, len(key), maxKeyBytes)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e || c == '\\' {
			return fmt.Errorf("%w: %q: byte %#x at %d", ErrInvalidKey, key, c, i)
		}
	}
	for part := range strings.SplitSeq(key, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%w: %q: empty, \".\" or \"..\" part", ErrInvalidKey, key)
		}
	}
	return nil
}
