package record

import "fmt"

// ChangeType says what a record does to its table. Log tables only append;
// primary-key tables write a changelog.
type ChangeType uint8

const (
	// AppendOnly (+A) is a row appended to a log table.
	AppendOnly ChangeType = 0
	// Insert (+I) is a new key.
	Insert ChangeType = 1
	// UpdateBefore (-U) is the old row of an updated key.
	UpdateBefore ChangeType = 2
	// UpdateAfter (+U) is the new row of an updated key.
	UpdateAfter ChangeType = 3
	// Delete (-D) is the last row of a deleted key.
	Delete ChangeType = 4

	maxChangeType = Delete
)

// String returns the changelog notation: +A, +I, -U, +U, -D.
func (c ChangeType) String() string {
	switch c {
	case AppendOnly:
		return "+A"
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	default:
		return fmt.Sprintf("change(%d)", uint8(c))
	}
}

// Valid reports whether c is a known change type.
func (c ChangeType) Valid() bool { return c <= maxChangeType }
