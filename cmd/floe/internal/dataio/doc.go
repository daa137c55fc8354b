// Package dataio moves a table's rows to and from JSON lines, the format
// of floe produce, consume, lookup and table import/export: one JSON
// object a line, a row's columns plus the members consume adds (_bucket,
// _offset, _timestamp, and a changelog's _change).
//
//   - LineReader and EachLine read JSON lines of any length up to
//     MaxLineBytes, counting them; Interruptible makes a reader end with
//     its context.
//   - MetaSplitter takes the added members out of a line, and says what
//     its _change does (Change).
//   - Import loads lines into a table: parsed in parallel, written in
//     input order through one writer.
//   - Export writes a table's records or rows, buckets read in parallel,
//     each bucket's lines in its order; AppendRecordJSON is the line of one
//     record. ResolveRanges and PollRanges read the part of each bucket's
//     log between two offsets.
//
// The floe command parses flags, shows progress and prints summaries.
package dataio
