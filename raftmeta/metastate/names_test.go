package metastate

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"Sales_2024", true},
		{"_", true},
		{strings.Repeat("x", maxNameBytes), true},
		{strings.Repeat("x", maxNameBytes+1), false},
		{"", false},
		{"a-b", false},
		{"a b", false},
		{"a.b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tc := range tests {
		if got := validName(tc.name); got != tc.ok {
			t.Errorf("validName(%.20q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
