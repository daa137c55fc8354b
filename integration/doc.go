// Package integration holds the tests that look at Floe as a whole: real
// clusters of the built binary on loopback (as they arrive) and checks over
// the repository itself, such as the direction of imports.
package integration
