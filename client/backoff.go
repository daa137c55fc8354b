package client

import "github.com/floedb/floe/internal/backoff"

// newRetryBackoff paces the retries of one client operation: waits grow
// from retryBackoffMin to retryBackoffMax, jittered so that many clients
// meeting the same failure do not retry in step.
func newRetryBackoff() backoff.Backoff {
	return backoff.Backoff{Min: retryBackoffMin, Max: retryBackoffMax, Jitter: true}
}
