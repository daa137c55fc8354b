// Package diskusage measures the disk space a folder holds: what the
// sustained-upsert benchmarks compare with the live data they wrote.
package diskusage
