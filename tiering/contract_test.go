package tiering_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/s3test"
	"github.com/floedb/floe/tiering"
)

// s3server is the real S3 server of this package's tests (versitygw, or
// the one FLOE_TEST_S3_ENDPOINT names).
var s3server s3test.Server

func TestMain(m *testing.M) {
	code := m.Run()
	if err := s3server.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the S3 server:", err)
	}
	os.Exit(code)
}

// testPartSize is the S3 stores' part size in these tests: S3's least, so a
// largeSize object goes up in three parts.
const (
	testPartSize = 5 << 20
	largeSize    = 2*testPartSize + 1<<20
)

// backend opens a fresh, empty store of one kind for a test.
type backend struct {
	name    string
	open    func(t *testing.T) tiering.ObjectStore
	presign bool // hands out URLs
}

func backends() []backend {
	return []backend{
		{name: "folder", open: openFolder},
		{name: "s3-gofakes3", open: func(t *testing.T) tiering.ObjectStore { return openS3(t, s3test.Fake(t)) }, presign: true},
		{name: "s3-gofakes3-prefix", open: func(t *testing.T) tiering.ObjectStore {
			cfg := s3test.Fake(t)
			cfg.Prefix = "floe/cluster-1"
			return openS3(t, cfg)
		}, presign: true},
		{name: "s3-real", open: func(t *testing.T) tiering.ObjectStore { return openS3(t, s3server.Bucket(t)) }, presign: true},
	}
}

func openFolder(t *testing.T) tiering.ObjectStore {
	f, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func openS3(t *testing.T, cfg tiering.S3Config) *tiering.S3 {
	t.Helper()
	cfg.PartSize = testPartSize
	s, err := tiering.NewS3(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestObjectStoreContract runs the one contract every ObjectStore holds
// against each backend.
func TestObjectStoreContract(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, b backend, s tiering.ObjectStore)
	}{
		{"RoundTrip", testRoundTrip},
		{"Overwrite", testOverwrite},
		{"EmptyObject", testEmptyObject},
		{"PutReadsSizeBytes", testPutReadsSizeBytes},
		{"Ranges", testRanges},
		{"Missing", testMissing},
		{"InvalidKeys", testInvalidKeys},
		{"ListOrder", testListOrder},
		{"ListPrefixes", testListPrefixes},
		{"ListStops", testListStops},
		{"Delete", testDelete},
		{"FailedPut", testFailedPut},
		{"Large", testLarge},
		{"ConcurrentPuts", testConcurrentPuts},
		{"Presign", testPresign},
		{"String", testString},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, b, b.open(t)) })
			}
		})
	}
}

func put(t *testing.T, s tiering.ObjectStore, key, data string) {
	t.Helper()
	if err := s.Put(t.Context(), key, strings.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// get reads a range; a missing object's error may come from Get or Read.
func get(t *testing.T, s tiering.ObjectStore, key string, offset, length int64) (string, error) {
	t.Helper()
	r, err := s.Get(t.Context(), key, offset, length)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

func mustGet(t *testing.T, s tiering.ObjectStore, key string) string {
	t.Helper()
	got, err := get(t, s, key, 0, -1)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return got
}

func testRoundTrip(t *testing.T, _ backend, s tiering.ObjectStore) {
	const key, data = "logs/t1/b0/00000000000000000000.log", "some record batches"
	before := time.Now().Add(-time.Minute) // the server's clock may differ a bit
	put(t, s, key, data)
	if got := mustGet(t, s, key); got != data {
		t.Fatalf("get = %q, want %q", got, data)
	}
	info, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != key || info.Size != int64(len(data)) || info.Modified.Before(before) {
		t.Fatalf("stat = %+v, want key %s, size %d, modified after %v", info, key, len(data), before)
	}
}

func testOverwrite(t *testing.T, _ backend, s tiering.ObjectStore) {
	put(t, s, "snap/1", "the first, longer version")
	put(t, s, "snap/1", "second")
	if got := mustGet(t, s, "snap/1"); got != "second" {
		t.Fatalf("get = %q, want the second version", got)
	}
	if info, err := s.Stat(t.Context(), "snap/1"); err != nil || info.Size != 6 {
		t.Fatalf("stat = %+v, %v; want size 6", info, err)
	}
}

func testEmptyObject(t *testing.T, _ backend, s tiering.ObjectStore) {
	put(t, s, "empty", "")
	for _, r := range [][2]int64{{0, -1}, {0, 10}, {0, 0}, {5, -1}} {
		if got, err := get(t, s, "empty", r[0], r[1]); err != nil || got != "" {
			t.Errorf("get(%d, %d) = %q, %v; want empty", r[0], r[1], got, err)
		}
	}
	if info, err := s.Stat(t.Context(), "empty"); err != nil || info.Size != 0 {
		t.Fatalf("stat = %+v, %v; want size 0", info, err)
	}
}

func testPutReadsSizeBytes(t *testing.T, _ backend, s tiering.ObjectStore) {
	if err := s.Put(t.Context(), "k", strings.NewReader("0123456789"), 4); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "k"); got != "0123" {
		t.Fatalf("get = %q, want the 4 bytes Put was given the size of", got)
	}
	if err := s.Put(t.Context(), "k", strings.NewReader("x"), -1); err == nil {
		t.Fatal("put with size -1 succeeded")
	}
}

func testRanges(t *testing.T, _ backend, s tiering.ObjectStore) {
	const data = "0123456789"
	put(t, s, "r", data)
	for _, c := range []struct {
		offset, length int64
		want           string
	}{
		{0, -1, data},
		{0, 10, data},
		{2, 3, "234"},      // middle
		{0, 1, "0"},        // first byte
		{9, 1, "9"},        // last byte
		{7, -1, "789"},     // to the end
		{8, 10, "89"},      // past the end
		{10, -1, ""},       // at the end
		{15, 2, ""},        // past the end
		{3, 0, ""},         // nothing
		{0, 1 << 40, data}, // far past the end
	} {
		if got, err := get(t, s, "r", c.offset, c.length); err != nil || got != c.want {
			t.Errorf("get(%d, %d) = %q, %v; want %q", c.offset, c.length, got, err, c.want)
		}
	}
	if _, err := s.Get(t.Context(), "r", -1, 2); err == nil {
		t.Error("get at offset -1 succeeded")
	}
}

func testMissing(t *testing.T, _ backend, s tiering.ObjectStore) {
	put(t, s, "there/a", "x") // a sibling and a parent of the missing keys
	for _, key := range []string{"nothing", "there/b", "there", "there/a/below"} {
		for _, r := range [][2]int64{{0, -1}, {3, 4}, {0, 0}} {
			_, err := get(t, s, key, r[0], r[1])
			if !errors.Is(err, tiering.ErrNotFound) {
				t.Errorf("get %s (%d, %d): %v, want ErrNotFound", key, r[0], r[1], err)
			} else if !strings.Contains(err.Error(), key) {
				t.Errorf("get %s: error %q does not name the key", key, err)
			}
		}
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, tiering.ErrNotFound) {
			t.Errorf("stat %s: %v, want ErrNotFound", key, err)
		}
	}
}

var invalidKeys = []string{
	"", "/a", "a/", "a//b", "./a", "a/./b", "a/..", "..", "a b", "a\\b", "a\tb", "é",
	strings.Repeat("k", 1025),
}

func testInvalidKeys(t *testing.T, _ backend, s tiering.ObjectStore) {
	ctx := t.Context()
	for _, key := range invalidKeys {
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); !errors.Is(err, tiering.ErrInvalidKey) {
			t.Errorf("put %q: %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Get(ctx, key, 0, -1); !errors.Is(err, tiering.ErrInvalidKey) {
			t.Errorf("get %q: %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, tiering.ErrInvalidKey) {
			t.Errorf("stat %q: %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, "fine", key); !errors.Is(err, tiering.ErrInvalidKey) {
			t.Errorf("delete %q: %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.PresignGet(ctx, key, time.Minute); !errors.Is(err, tiering.ErrInvalidKey) {
			t.Errorf("presign %q: %v, want ErrInvalidKey", key, err)
		}
	}
	for _, prefix := range []string{"/", "/a", "a//", "a/./", "../", "a b", "é"} {
		err := s.List(ctx, prefix, func(tiering.ObjectInfo) error { return nil })
		if !errors.Is(err, tiering.ErrInvalidKey) {
			t.Errorf("list %q: %v, want ErrInvalidKey", prefix, err)
		}
	}
}

// listKeys is what List(prefix) calls fn with, checked against the sizes
// put stored (each object's data is its key).
func listKeys(t *testing.T, s tiering.ObjectStore, prefix string) []string {
	t.Helper()
	keys := []string{}
	err := s.List(t.Context(), prefix, func(o tiering.ObjectInfo) error {
		if o.Size != int64(len(o.Key)) || o.Modified.IsZero() {
			t.Errorf("list %q: %+v, want size %d and a time", prefix, o, len(o.Key))
		}
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	return keys
}

// listed are keys whose folder walk order is not their key order: '-' and
// '.' sort below '/', '0' and 'a' above.
var listed = []string{"x/a/y", "x/a-", "x-b", "x/b", "x.b", "x0", "xa", "w", "y", "x/a/z/1", "x/a/yy"}

func putListed(t *testing.T, s tiering.ObjectStore) {
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(listed)) {
		put(t, s, listed[i], listed[i])
	}
}

func testListOrder(t *testing.T, _ backend, s tiering.ObjectStore) {
	if got := listKeys(t, s, ""); len(got) != 0 {
		t.Fatalf("empty store lists %q", got)
	}
	putListed(t, s)
	want := slices.Sorted(slices.Values(listed))
	if got := listKeys(t, s, ""); !slices.Equal(got, want) {
		t.Fatalf("list = %q\nwant   %q", got, want)
	}
}

func testListPrefixes(t *testing.T, _ backend, s tiering.ObjectStore) {
	putListed(t, s)
	for _, prefix := range []string{"x", "x/", "x/a", "x/a/", "x/a/y", "x/a/y/", "x/a/z/", "x.", "x-", "z", "x/c", "x/a/y/z", "w/"} {
		var want []string
		for _, k := range listed {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if got := listKeys(t, s, prefix); !slices.Equal(got, want) {
			t.Errorf("list %q = %q, want %q", prefix, got, want)
		}
	}
}

func testListStops(t *testing.T, _ backend, s tiering.ObjectStore) {
	putListed(t, s)
	errStop := errors.New("stop")
	calls := 0
	err := s.List(t.Context(), "", func(tiering.ObjectInfo) error {
		calls++
		if calls == 2 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) || calls != 2 {
		t.Fatalf("list = %v after %d calls, want fn's error after 2", err, calls)
	}
}

func testDelete(t *testing.T, _ backend, s tiering.ObjectStore) {
	put(t, s, "d/a", "d/a")
	put(t, s, "d/b", "d/b")
	put(t, s, "d/deep/er/c", "d/deep/er/c")
	if err := s.Delete(t.Context(), "d/a", "d/missing", "nowhere/at/all", "d/a", "d/deep/er/c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context()); err != nil {
		t.Fatalf("delete of no keys: %v", err)
	}
	for _, key := range []string{"d/a", "d/deep/er/c"} {
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, tiering.ErrNotFound) {
			t.Errorf("stat %s after delete: %v, want ErrNotFound", key, err)
		}
	}
	if got := listKeys(t, s, ""); !slices.Equal(got, []string{"d/b"}) {
		t.Fatalf("list after delete = %q, want [d/b]", got)
	}
	put(t, s, "d/deep/er/c", "d/deep/er/c") // where a deleted object's folders were
	if got := listKeys(t, s, "d/deep/"); !slices.Equal(got, []string{"d/deep/er/c"}) {
		t.Fatalf("list after put again = %q", got)
	}
}

// failingReader yields n bytes, then fails (with err; io.EOF: a short
// reader).
type failingReader struct {
	n   int64
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	n := min(int64(len(p)), r.n)
	clear(p[:n])
	r.n -= n
	return int(n), nil
}

func testFailedPut(t *testing.T, _ backend, s tiering.ObjectStore) {
	errBroken := errors.New("source broke")
	for _, c := range []struct {
		name      string
		size, ok  int64
		readerErr error
	}{
		{"small", 100, 50, errBroken},
		{"small-short", 100, 99, io.EOF},
		{"nothing", 100, 0, errBroken},
		{"large", largeSize, testPartSize + 1<<20, errBroken}, // fails in the second part
		{"large-short", largeSize, largeSize - 1, io.EOF},     // short in the last part
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			err := s.Put(ctx, "fresh/"+c.name, &failingReader{n: c.ok, err: c.readerErr}, c.size)
			if err == nil {
				t.Fatal("put from a failing reader succeeded")
			}
			if _, err := s.Stat(ctx, "fresh/"+c.name); !errors.Is(err, tiering.ErrNotFound) {
				t.Errorf("stat after a failed put of a new object: %v, want ErrNotFound", err)
			}
			put(t, s, "kept/"+c.name, "previous")
			if err := s.Put(ctx, "kept/"+c.name, &failingReader{n: c.ok, err: c.readerErr}, c.size); err == nil {
				t.Fatal("put from a failing reader succeeded")
			}
			if got := mustGet(t, s, "kept/"+c.name); got != "previous" {
				t.Errorf("after a failed put over it, get = %.20q, want the previous object", got)
			}
		})
	}
	if got := listKeys(t, s, "fresh"); len(got) != 0 {
		t.Fatalf("failed puts left %q", got)
	}
}

// largeData is size bytes that are not all alike.
func largeData(size int) []byte {
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{7}).Read(data)
	return data
}

func testLarge(t *testing.T, _ backend, s tiering.ObjectStore) {
	data := largeData(largeSize)
	if err := s.Put(t.Context(), "big", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	got, err := get(t, s, "big", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(got), data) {
		t.Fatalf("get returned %d bytes unlike the %d put", len(got), len(data))
	}
	// Across the boundary of the first and second parts.
	got, err = get(t, s, "big", testPartSize-10, 20)
	if err != nil || !bytes.Equal([]byte(got), data[testPartSize-10:testPartSize+10]) {
		t.Fatalf("ranged get across parts: %v", err)
	}
	if info, err := s.Stat(t.Context(), "big"); err != nil || info.Size != largeSize {
		t.Fatalf("stat = %+v, %v; want size %d", info, err, largeSize)
	}
}

func testConcurrentPuts(t *testing.T, _ backend, s tiering.ObjectStore) {
	const writers, perWriter = 8, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	var want []string
	for w := range writers {
		for i := range perWriter {
			want = append(want, fmt.Sprintf("c/%d/%d", w, i))
		}
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("c/%d/%d", w, i)
				errs <- s.Put(t.Context(), key, strings.NewReader(key), int64(len(key)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	slices.Sort(want)
	if got := listKeys(t, s, "c/"); !slices.Equal(got, want) {
		t.Fatalf("list = %q, want %q", got, want)
	}
}

func testPresign(t *testing.T, b backend, s tiering.ObjectStore) {
	put(t, s, "p/obj", "presigned bytes")
	url, err := s.PresignGet(t.Context(), "p/obj", time.Minute)
	if !b.presign {
		if !errors.Is(err, tiering.ErrNoPresign) {
			t.Fatalf("presign = %q, %v; want ErrNoPresign", url, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "presigned bytes" {
		t.Fatalf("GET presigned URL: %s %q %v", resp.Status, body, err)
	}
}

func testString(t *testing.T, b backend, s tiering.ObjectStore) {
	name := s.String()
	scheme := "s3://"
	if b.name == "folder" {
		scheme = "file:///"
	}
	if !strings.HasPrefix(name, scheme) || strings.Contains(name, "secret") {
		t.Fatalf("String() = %q, want %s… and no credentials", name, scheme)
	}
}
