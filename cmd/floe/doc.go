// Command floe is Floe's one binary: the server roles and the command-line
// client. Run `floe help` for the list of commands.
//
// It inspects storage (`floe log dump|verify` read a log folder without
// changing it, safe beside a running node), checks schemas and JSON rows
// (`floe schema check|rows`), and moves data in and out of log tables as
// JSON lines: `floe produce DB.TABLE` appends one row per line of stdin or
// --file, `floe consume DB.TABLE` prints rows with their _bucket, _offset
// and _timestamp, up to the high watermarks seen at start or, with
// --follow, until interrupted. `floe bench produce|e2e` measures write
// throughput and latency and prints its result as JSON on the last line.
// Every command writes errors to stderr and exits non-zero: 1 for a
// failure, 2 for a usage mistake.
//
// The commands are a spf13/cobra tree (commands.go) built per call of run,
// so tests run the real command lines in-process. Each command defines its
// flags once, on a standard flag.FlagSet, and cobra reads them through
// pflag: parsing, help text (`floe db -h`) and shell completion (`floe
// completion bash|zsh|fish`) come from that one definition. The client
// flags (--server, --output, --timeout) fall back to FLOE_SERVER,
// FLOE_OUTPUT and FLOE_TIMEOUT.
package main
