package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// logSpecs are the subcommands of floe log. They read a log folder
// read-only: they never recover, truncate or preallocate, so they are safe
// on the folder of a running node.
func logSpecs(env *cliEnv) []cmdSpec {
	return []cmdSpec{logDumpSpec(env), logVerifySpec(env)}
}

// batchLine is one batch in `floe log dump` output.
type batchLine struct {
	Segment    int64  `json:"segment"`
	Position   int64  `json:"position"`
	BaseOffset int64  `json:"base_offset"`
	LastOffset int64  `json:"last_offset"`
	Records    int32  `json:"records"`
	Bytes      int    `json:"bytes"`
	Epoch      int32  `json:"leader_epoch"`
	Timestamp  string `json:"timestamp"`
	SchemaID   int16  `json:"schema_id"`
	WriterID   int64  `json:"writer_id"`
	Sequence   int32  `json:"batch_sequence"`
	Format     string `json:"format"`
	Compressed string `json:"compression"`
	CRCValid   bool   `json:"crc_valid"`
}

func logDumpSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "log dump DIR [--from OFFSET] [--limit N] [--output json|text]",
		summary: "print a log folder's batches as JSON lines (or a table)",
		define: func(fs *flag.FlagSet) runFunc {
			from := fs.Int64("from", 0, "first offset to print")
			limit := fs.Int("limit", 0, "stop after this many batches (0: all)")
			var output string
			choiceVar(fs, &output, "output", "json", outputFormats, "output format: json (one batch per line) or text (a table)")
			return func(ctx context.Context, pos []string) error {
				if len(pos) != 1 {
					return fmt.Errorf("%w: want one log folder", errUsage)
				}
				enc := json.NewEncoder(env.stdout)
				emit := func(b batchLine) error { return enc.Encode(b) }
				if output == "text" {
					w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
					defer w.Flush()
					fmt.Fprintln(w, "SEGMENT\tPOSITION\tBASE OFFSET\tLAST OFFSET\tRECORDS\tBYTES\tEPOCH\tTIMESTAMP\tFORMAT\tCOMPRESSION\tCRC")
					emit = func(b batchLine) error {
						crc := "ok"
						if !b.CRCValid {
							crc = "BAD"
						}
						_, err := fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", b.Segment, b.Position, b.BaseOffset, b.LastOffset,
							b.Records, b.Bytes, b.Epoch, b.Timestamp, b.Format, b.Compressed, crc)
						return err
					}
				}
				printed := 0
				return walkLog(ctx, pos[0], func(seg int64, at int64, b record.Batch, crcOK bool) error {
					if b.LastOffset() < *from {
						return nil
					}
					if *limit > 0 && printed >= *limit {
						return errStopWalk
					}
					printed++
					return emit(batchLine{
						Segment: seg, Position: at, BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset(),
						Records: b.RecordCount(), Bytes: len(b), Epoch: b.LeaderEpoch(),
						Timestamp: time.UnixMilli(b.CommitTimestamp()).UTC().Format(time.RFC3339Nano),
						SchemaID:  b.SchemaID(), WriterID: b.WriterID(), Sequence: b.BatchSequence(),
						Format: b.PayloadFormat().String(), Compressed: b.Compression().String(), CRCValid: crcOK,
					})
				}, nil)
			}
		}}
}

// segmentSummary is one segment in `floe log verify` output.
type segmentSummary struct {
	BaseOffset int64  `json:"base_offset"`
	NextOffset int64  `json:"next_offset"`
	Batches    int    `json:"batches"`
	Bytes      int64  `json:"bytes"`
	Problem    string `json:"problem,omitempty"`
}

func logVerifySpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "log verify DIR [--output text|json]",
		summary: "check every batch of a log folder (CRC, offsets)",
		define: func(fs *flag.FlagSet) runFunc {
			var output string
			outputVar(fs, &output, "")
			return func(ctx context.Context, pos []string) error {
				var err error
				if len(pos) != 1 {
					return fmt.Errorf("%w: want one log folder", errUsage)
				}
				var sums []segmentSummary
				var cur *segmentSummary
				problems := 0
				next := int64(-1)
				err = walkLog(ctx, pos[0], func(seg int64, at int64, b record.Batch, crcOK bool) error {
					if cur == nil || cur.BaseOffset != seg {
						sums = append(sums, segmentSummary{BaseOffset: seg, NextOffset: seg})
						cur = &sums[len(sums)-1]
					}
					switch {
					case !crcOK:
						cur.Problem = fmt.Sprintf("bad CRC in batch at offset %d (byte %d)", b.BaseOffset(), at)
					case next >= 0 && b.BaseOffset() != next:
						cur.Problem = fmt.Sprintf("batch at byte %d has offset %d, expected %d", at, b.BaseOffset(), next)
					}
					if cur.Problem != "" {
						problems++
						return errStopSegment
					}
					cur.Batches++
					cur.Bytes += int64(len(b))
					cur.NextOffset = b.NextOffset()
					next = b.NextOffset()
					return nil
				}, func(seg int64, problem string) {
					if cur == nil || cur.BaseOffset != seg {
						sums = append(sums, segmentSummary{BaseOffset: seg, NextOffset: seg})
						cur = &sums[len(sums)-1]
					}
					if cur.Problem == "" {
						cur.Problem = problem
						problems++
					}
				})
				if err != nil {
					return err
				}
				if output == "json" {
					if err := json.NewEncoder(env.stdout).Encode(map[string]any{"segments": sums, "problems": problems}); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(env.stdout, "%-22s %-22s %10s %14s  %s\n", "BASE OFFSET", "NEXT OFFSET", "BATCHES", "BYTES", "STATUS")
					for _, s := range sums {
						status := "ok"
						if s.Problem != "" {
							status = s.Problem
						}
						fmt.Fprintf(env.stdout, "%-22d %-22d %10d %14d  %s\n", s.BaseOffset, s.NextOffset, s.Batches, s.Bytes, status)
					}
				}
				if problems > 0 {
					return fmt.Errorf("%d segment(s) with problems", problems)
				}
				return nil
			}
		}}
}

var (
	errStopWalk    = errors.New("stop walk")
	errStopSegment = errors.New("stop segment")
)

// walkLog calls fn for every batch of every segment in dir, streaming the
// files with logstore's reader, which says where each segment's valid data
// ends: at a zero tail (preallocated space) or the file's end quietly,
// otherwise with a problem. A batch with a bad CRC goes to fn, which may
// read on past it.
func walkLog(ctx context.Context, dir string,
	fn func(segment, position int64, b record.Batch, crcOK bool) error,
	problem func(segment int64, problem string)) error {
	segs, err := logstore.ListSegments(dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return fmt.Errorf("no segment files in %s", dir)
	}
	for _, s := range segs {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := walkSegment(s, fn, problem)
		if errors.Is(err, errStopWalk) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// walkSegment is walkLog over one segment file.
func walkSegment(s logstore.SegmentFile, fn func(segment, position int64, b record.Batch, crcOK bool) error,
	problem func(segment int64, problem string)) error {
	f, err := os.Open(s.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := logstore.NewSegmentReader(f)
	for {
		b, pos, err := r.Next()
		var end *logstore.TailError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &end) && end.Reason == logstore.TailBadCRC:
			err = fn(s.BaseOffset, pos, b, false)
		case end != nil:
			if end.Reason != logstore.TailZero && problem != nil {
				problem(s.BaseOffset, end.Detail)
			}
			return nil
		case err != nil:
			return err
		default:
			err = fn(s.BaseOffset, pos, b, true)
		}
		if errors.Is(err, errStopSegment) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
