package kvstore

import (
	"bytes"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
)

// MaxStoreKeyBytes bounds a store key: a primary key, preceded by its bucket
// key under the prefix layout (see Keys).
const MaxStoreKeyBytes = 2 * MaxKeyBytes

// Page is one page of a paged scan of a store's rows (ScanPage).
type Page struct {
	// Rows holds the page's rows end to end, in store-key order; Sizes the
	// size of each.
	Rows  []byte
	Sizes []uint32
	// SchemaIDs holds the schema version of each row.
	SchemaIDs []int16
	// LastKey is a copy of the store key of the page's last row: the next
	// page starts after it. Nil for an empty page.
	LastKey []byte
	// Done says no row follows the page's last one.
	Done bool
	// AppliedOffset is the applied offset of the view the page was read
	// from: its rows are the bucket's state just below that log offset.
	AppliedOffset int64
}

// ScanPage returns the rows whose store keys follow after (the LastKey of
// the previous page; nil or empty for the first row), in key order, from one
// consistent view: at most maxRows rows, and no more rows once they hold
// maxBytes, though a page holds at least one row whatever its size. The
// rows are appended to dst.
//
// Each page reads a view of its own. A scan that runs while the store is
// written therefore returns every key at most once and in order, each row as
// the page that read it saw it; a key written behind the scan's position
// meanwhile is not returned.
func (s *Store) ScanPage(after []byte, maxRows, maxBytes int, dst []byte) (Page, error) {
	switch {
	case len(after) > MaxStoreKeyBytes:
		return Page{}, fmt.Errorf("%w: resume key of %d bytes, store keys have at most %d", ErrInvalidScan, len(after), MaxStoreKeyBytes)
	case maxRows <= 0 || maxBytes <= 0:
		return Page{}, fmt.Errorf("%w: limits of %d rows and %d bytes", ErrInvalidScan, maxRows, maxBytes)
	}
	p := Page{Rows: dst}
	var last []byte // the Badger key of the page's last row
	err := s.view(func(txn *badger.Txn) error {
		var err error
		if p.AppliedOffset, err = readAppliedOffset(txn, s.appliedKey); err != nil {
			return err
		}
		last, err = s.fillPage(txn, &p, after, maxRows, maxBytes)
		return err
	})
	if err != nil {
		return Page{Rows: dst}, err
	}
	if last != nil {
		p.LastKey = last[len(s.rowKeyPrefix):]
	}
	return p, nil
}

// fillPage appends to p the rows after store key after, within the limits,
// sets p.Done when it reached the last row, and returns the Badger key of the
// last row it took (nil: none).
func (s *Store) fillPage(txn *badger.Txn, p *Page, after []byte, maxRows, maxBytes int) ([]byte, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = s.rowKeyPrefix
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	start := s.appendRowKey(nil, after)
	it.Seek(start)
	if len(after) > 0 && it.Valid() && bytes.Equal(it.Item().Key(), start) {
		it.Next() // the previous page's last row
	}
	first := len(p.Rows)
	var last []byte
	for ; it.Valid(); it.Next() {
		if len(p.Sizes) == maxRows || (len(p.Sizes) > 0 && len(p.Rows)-first >= maxBytes) {
			return last, nil // a row follows: not done
		}
		item := it.Item()
		before := len(p.Rows)
		if err := itemRow(item, func(id int16, row []byte) error {
			p.Rows = append(p.Rows, row...)
			p.SchemaIDs = append(p.SchemaIDs, id)
			return nil
		}); err != nil {
			return nil, pkgerr.Errorf("kvstore", "scan page: %w", err)
		}
		p.Sizes = append(p.Sizes, uint32(len(p.Rows)-before))
		last = item.KeyCopy(last)
	}
	p.Done = true
	return last, nil
}
