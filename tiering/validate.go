package tiering

import (
	"fmt"
	"strings"
)

// validatePrefix checks a List prefix: "" or the start of a valid key
// ("seg", "seg/", "seg/00", "seg/."). It completes the prefix to a key
// where its last part could still grow into a valid one, and checks that.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	probe := prefix
	if _, last := splitPrefix(prefix); last == "" || last == "." || last == ".." {
		probe += "x"
	}
	if err := ValidateKey(probe); err != nil {
		return fmt.Errorf("%w: prefix %q", ErrInvalidKey, prefix)
	}
	return nil
}

// splitPrefix splits a prefix at its last slash: "a/b/c" is "a/b" and "c",
// "a/b/" is "a/b" and "", "ab" is "" and "ab".
func splitPrefix(prefix string) (dir, last string) {
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return "", prefix
	}
	return prefix[:i], prefix[i+1:]
}

// checkPut checks Put's size: the size bytes are what Put reads and stores,
// so it must be known.
func checkPut(size int64) error {
	if size < 0 {
		return fmt.Errorf("size %d < 0: Put needs the object's size", size)
	}
	return nil
}

// checkGet checks Get's range start; any length is valid (< 0: to the end).
func checkGet(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("offset %d < 0", offset)
	}
	return nil
}
