package server

import (
	"slices"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	in := []string{"floe", "serve", "--s3-secret-key", "hunter2", "--s3-secret-key-file", "/etc/s3", "-password=pw",
		"--tls-key", "/etc/node.key", "--id", "1"}
	want := []string{"floe", "serve", "--s3-secret-key", "REDACTED", "--s3-secret-key-file", "/etc/s3", "-password=REDACTED",
		"--tls-key", "/etc/node.key", "--id", "1"}
	if got := redactArgs(in); !slices.Equal(got, want) {
		t.Fatalf("redactArgs = %q, want %q", got, want)
	}
}
