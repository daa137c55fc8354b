package kvstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// scanAll pages through s with the limits and returns "key=row" for every
// row, in the order the pages gave them, and the number of pages.
func scanAll(t *testing.T, s *Store, maxRows, maxBytes int) (rows []string, pages int) {
	t.Helper()
	var after []byte
	for {
		p, err := s.ScanPage(after, maxRows, maxBytes, nil)
		if err != nil {
			t.Fatalf("ScanPage after %q: %v", after, err)
		}
		pages++
		if len(p.Sizes) > maxRows {
			t.Fatalf("page of %d rows, limit %d", len(p.Sizes), maxRows)
		}
		if len(p.Sizes) > 1 && len(p.Rows)-int(p.Sizes[len(p.Sizes)-1]) >= maxBytes {
			t.Fatalf("page of %d bytes went on past the %d-byte limit", len(p.Rows), maxBytes)
		}
		if len(p.Sizes) == 0 && !p.Done {
			t.Fatalf("empty page not done")
		}
		off := 0
		for i, n := range p.Sizes {
			row := string(p.Rows[off : off+int(n)])
			off += int(n)
			key := strings.TrimPrefix(strings.SplitN(row, "#", 2)[0], "row ")
			if i == len(p.Sizes)-1 && key != string(p.LastKey) {
				t.Fatalf("LastKey %q, last row's key %q", p.LastKey, key)
			}
			rows = append(rows, key+"="+row)
		}
		if off != len(p.Rows) {
			t.Fatalf("sizes add up to %d of %d bytes", off, len(p.Rows))
		}
		if p.Done {
			return rows, pages
		}
		after = p.LastKey
	}
}

func TestScanPage(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	if rows, pages := scanAll(t, s, 3, 1<<20); rows != nil || pages != 1 {
		t.Fatalf("empty store: %v in %d pages", rows, pages)
	}
	var changes []Change
	var want []string
	for i := range 20 {
		key := fmt.Sprintf("k%02d", i)
		row := fmt.Sprintf("row %s#%s", key, strings.Repeat("x", i))
		changes = append(changes, Change{Key: []byte(key), Row: []byte(row), Kind: record.Insert})
		want = append(want, key+"="+row)
	}
	if err := s.Apply(changes, 20); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name              string
		maxRows, maxBytes int
		pages             int
	}{
		{"one page", 100, 1 << 20, 1},
		{"exact rows", 20, 1 << 20, 1}, // the page is full and knows no row follows
		{"by rows", 3, 1 << 20, 7},
		{"one row a page", 1, 1 << 20, 20},
		{"by bytes", 100, 40, 0},
		{"a row over the byte limit", 100, 1, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := scanAll(t, s, tc.maxRows, tc.maxBytes)
			if !slices.Equal(got, want) {
				t.Fatalf("rows\n%v\nwant\n%v", got, want)
			}
			if tc.pages > 0 && pages != tc.pages {
				t.Fatalf("%d pages, want %d", pages, tc.pages)
			}
		})
	}

	p, err := s.ScanPage(nil, 5, 1<<20, nil)
	if err != nil || p.AppliedOffset != 20 || p.Done {
		t.Fatalf("first page: offset %d, done %v, %v", p.AppliedOffset, p.Done, err)
	}
	// Writes between pages: a key deleted ahead of the scan is not
	// returned, one added behind it is not either, one added ahead is,
	// and the page's resume key need not exist any more.
	if err := s.Apply([]Change{
		{Key: []byte("k04"), Row: []byte("row k04#"), Kind: record.Delete},
		{Key: []byte("k06"), Row: []byte("row k06#"), Kind: record.Delete},
		{Key: []byte("k00a"), Row: []byte("row k00a#"), Kind: record.Insert},
		{Key: []byte("k07a"), Row: []byte("row k07a#"), Kind: record.Insert},
	}, 21); err != nil {
		t.Fatal(err)
	}
	next, err := s.ScanPage(p.LastKey, 3, 1<<20, nil)
	if err != nil || next.AppliedOffset != 21 || string(next.Rows) != "row k05#xxxxxrow k07#xxxxxxxrow k07a#" {
		t.Fatalf("page after the writes: %q at %d, %v", next.Rows, next.AppliedOffset, err)
	}

	// The rows go after dst.
	p, err = s.ScanPage([]byte("k18"), 5, 1<<20, []byte("dst:"))
	if err != nil || string(p.Rows) != "dst:row k19#"+strings.Repeat("x", 19) || !p.Done || string(p.LastKey) != "k19" {
		t.Fatalf("last page into dst: %q done %v last %q, %v", p.Rows, p.Done, p.LastKey, err)
	}
	// After the last key: an empty, done page.
	p, err = s.ScanPage([]byte("k19"), 5, 1<<20, nil)
	if err != nil || len(p.Sizes) != 0 || !p.Done || p.LastKey != nil {
		t.Fatalf("after the last key: %+v, %v", p, err)
	}
}

func TestScanPageRefuses(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	for _, tc := range []struct {
		name              string
		after             []byte
		maxRows, maxBytes int
	}{
		{"key too long", make([]byte, MaxStoreKeyBytes+1), 1, 1},
		{"no rows", nil, 0, 1},
		{"no bytes", nil, 1, 0},
	} {
		if _, err := s.ScanPage(tc.after, tc.maxRows, tc.maxBytes, nil); !errors.Is(err, ErrInvalidScan) {
			t.Errorf("%s: %v, want ErrInvalidScan", tc.name, err)
		}
	}
	s.Close()
	if _, err := s.ScanPage(nil, 1, 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed store: %v", err)
	}
}

// TestScanPageIsolated: a page holds its own store's rows only, whatever the
// neighbouring stores in the DB hold.
func TestScanPageIsolated(t *testing.T) {
	db := openTestDB(t, Config{Dir: t.TempDir()})
	stores := make([]*Store, 3)
	for i := range stores {
		var err error
		if stores[i], err = db.Open(StoreID{Table: 7, Bucket: uint32(i)}); err != nil {
			t.Fatal(err)
		}
		var changes []Change
		for j := range 5 {
			key := fmt.Sprintf("k%d", j)
			changes = append(changes, Change{Key: []byte(key), Row: fmt.Appendf(nil, "row %s#%d", key, i), Kind: record.Insert})
		}
		if err := stores[i].Apply(changes, 5); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range stores {
		rows, _ := scanAll(t, s, 2, 1<<20)
		if len(rows) != 5 {
			t.Fatalf("store %d: %d rows", i, len(rows))
		}
		for _, r := range rows {
			if !strings.HasSuffix(r, fmt.Sprintf("#%d", i)) {
				t.Fatalf("store %d returned %q", i, r)
			}
		}
	}
}
