// Command floe is Floe's one binary: the server roles and the command-line
// client. Run `floe help` for the list of commands.
//
// Today it inspects storage (`floe log dump|verify` read a log folder without
// changing it, safe beside a running node) and checks schemas and JSON rows
// (`floe schema check|rows`). Every command writes errors to stderr and exits
// non-zero: 1 for a failure, 2 for a usage mistake.
package main
