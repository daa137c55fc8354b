package dataio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// Bounds of one chunk of an import's lines: the unit its parsers take and
// its writer is fed.
const (
	importChunkLines = 1024
	importChunkBytes = 512 << 10
)

// importChunkQueue is how many chunks wait before and after each parser:
// with the chunk being parsed, what an import holds in memory is
// concurrency × (2×importChunkQueue + 1) chunks, plus the writer's buffer.
const importChunkQueue = 2

// importChunk is a run of consecutive lines of an import: read, then parsed
// into rows.
type importChunk struct {
	data  []byte     // the lines' text
	lines []lineSpan // the chunk's non-blank lines, in data
	// readErr ends the import after the chunk's lines: the input could not
	// be read past them.
	readErr error

	// Set by the parser.
	rows  []byte      // the encoded rows end to end
	items []importRow // what to write, in line order
	bad   []badLine   // lines refused; without skip-bad, at most the one parsing stopped at
}

type lineSpan struct{ line, start, end int }

// importRow is one row to write: a span of importChunk.rows.
type importRow struct {
	change     Change // ChangeWrite or ChangeDelete
	line       int
	lineBytes  int // of the line's text
	start, end int
}

type badLine struct {
	line int
	err  error
}

var importChunks = sync.Pool{New: func() any { return new(importChunk) }}

func newImportChunk() *importChunk {
	c := importChunks.Get().(*importChunk)
	c.data, c.lines, c.readErr = c.data[:0], c.lines[:0], nil
	c.rows, c.items, c.bad = c.rows[:0], c.items[:0], c.bad[:0]
	return c
}

// importParser turns the lines of chunks into rows. One per parsing
// goroutine: codecs are not safe for concurrent use.
type importParser struct {
	rows    *record.JSONCodec // rows of the table
	keys    *record.JSONCodec // rows of deletes: the key set, other columns may be null
	pk      bool
	skipBad bool
	meta    MetaSplitter
}

func newImportParser(tbl *client.Table, skipBad bool) (*importParser, error) {
	p := &importParser{rows: tbl.JSONCodec(), pk: len(tbl.Info().PrimaryKey) > 0, skipBad: skipBad}
	if p.pk {
		s := tbl.Schema()
		for i, c := range s.Columns {
			s.Columns[i].Nullable = c.Nullable || !isKeyColumn(s, c.Name)
		}
		var err error
		if p.keys, err = record.NewJSONCodec(s); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func isKeyColumn(s record.Schema, name string) bool {
	for _, k := range s.PrimaryKey {
		if k == name {
			return true
		}
	}
	return false
}

// parse fills the rows of c; without skip-bad it stops at the first bad
// line.
func (p *importParser) parse(c *importChunk) {
	for _, l := range c.lines {
		start := len(c.rows)
		change, err := p.parseLine(c, c.data[l.start:l.end])
		switch {
		case err != nil:
			c.bad = append(c.bad, badLine{line: l.line, err: err})
			if !p.skipBad {
				return
			}
		case change == ChangeSkip:
			c.rows = c.rows[:start]
		default:
			c.items = append(c.items, importRow{change: change, line: l.line, lineBytes: l.end - l.start, start: start, end: len(c.rows)})
		}
	}
}

// parseLine appends the row of one line to c.rows.
func (p *importParser) parseLine(c *importChunk, object []byte) (Change, error) {
	cols, change, err := p.meta.Split(object)
	if err != nil {
		return 0, err
	}
	if !p.pk && change != ChangeWrite {
		return 0, fmt.Errorf("%w: a log table takes rows to append; -U and -D are a primary-key table's changes", ErrBadChange)
	}
	codec := p.rows
	if change == ChangeDelete {
		codec = p.keys
	}
	c.rows, err = codec.AppendRow(c.rows, cols)
	return change, err
}

// importWorker parses the chunks sent to it, in order.
type importWorker struct {
	in, out chan *importChunk
}

func (w *importWorker) run(ctx context.Context, p *importParser) {
	defer close(w.out)
	for c := range w.in {
		p.parse(c)
		select {
		case w.out <- c:
		case <-ctx.Done():
			return
		}
	}
}

// readChunks cuts the non-blank lines of in into chunks and hands them to
// the workers in turn (chunk n to worker n mod len(workers)), so that taking
// them back in the same turn gives them in input order. It closes the
// workers' inputs when done. A read error goes, after the lines before it,
// in the last chunk.
func readChunks(ctx context.Context, in io.Reader, workers []*importWorker) {
	defer func() {
		for _, w := range workers {
			close(w.in)
		}
	}()
	lr := NewLineReader(in)
	seq := 0
	c := newImportChunk()
	send := func() bool {
		select {
		case workers[seq%len(workers)].in <- c:
			seq++
			c = newImportChunk()
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		line, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			c.readErr = err
			break
		}
		if lr.Line() == 1 {
			// A UTF-8 byte order mark, as some editors write, is not JSON.
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		start := len(c.data)
		c.data = append(c.data, line...)
		c.lines = append(c.lines, lineSpan{line: lr.Line(), start: start, end: len(c.data)})
		if len(c.lines) >= importChunkLines || len(c.data) >= importChunkBytes {
			if !send() {
				return
			}
		}
	}
	if len(c.lines) > 0 || c.readErr != nil {
		send()
	}
}

// importFeeder hands the parsed rows, in input order, to the table's writer.
type importFeeder struct {
	w       importWriter
	skipBad bool
	counts  *ImportCounts
	// onBad reports a skipped line.
	onBad func(badLine)
}

// run takes the chunks back from the workers in the turn readChunks gave
// them out and writes their rows, until the input ends, a bad line (without
// skip-bad), a read error or ctx stops it. Nothing after a bad line is
// written.
func (f *importFeeder) run(ctx context.Context, workers []*importWorker) error {
	for seq := 0; ; seq++ {
		var c *importChunk
		var ok bool
		select {
		case c, ok = <-workers[seq%len(workers)].out:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !ok {
			return nil // the input ended
		}
		err := f.write(ctx, c)
		if err == nil {
			err = c.readErr
		}
		importChunks.Put(c)
		if err != nil {
			return err
		}
	}
}

// write writes the rows of a chunk and deals with its bad lines, in line
// order.
func (f *importFeeder) write(ctx context.Context, c *importChunk) error {
	bad := c.bad
	for _, r := range c.items {
		for len(bad) > 0 && bad[0].line < r.line {
			if err := f.badLine(bad[0]); err != nil {
				return err
			}
			bad = bad[1:]
		}
		err := f.w.write(ctx, r.change, c.rows[r.start:r.end])
		if err == nil {
			f.counts.Bytes.Add(int64(r.lineBytes))
		}
		switch {
		case err == nil && r.change == ChangeDelete:
			f.counts.Deletes.Add(1)
		case err == nil:
			f.counts.Writes.Add(1)
		case ctx.Err() != nil || errors.Is(err, client.ErrWriterClosed):
			return err
		default: // the row's own fault: too large for a batch
			if err := f.badLine(badLine{line: r.line, err: err}); err != nil {
				return err
			}
		}
	}
	for _, b := range bad {
		if err := f.badLine(b); err != nil {
			return err
		}
	}
	return nil
}

// badLine stops the import at a bad line, or with skip-bad counts it.
func (f *importFeeder) badLine(b badLine) error {
	if !f.skipBad {
		return fmt.Errorf("line %d: %w", b.line, b.err)
	}
	f.counts.Skipped.Add(1)
	f.onBad(b)
	return nil
}

// importWriter writes rows to a table: an append writer's or an upsert
// writer's calls.
type importWriter struct {
	write func(ctx context.Context, change Change, row []byte) error
	close func(ctx context.Context) error
	stats func() client.WriterStats
}

func newImportWriter(tbl *client.Table) (importWriter, error) {
	if len(tbl.Info().PrimaryKey) == 0 {
		w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll})
		if err != nil {
			return importWriter{}, err
		}
		return importWriter{close: w.Close, stats: w.Stats, write: func(ctx context.Context, _ Change, row []byte) error {
			_, err := w.Append(ctx, row)
			return err
		}}, nil
	}
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{Acks: client.AcksAll})
	if err != nil {
		return importWriter{}, err
	}
	return importWriter{close: w.Close, stats: w.Stats, write: func(ctx context.Context, change Change, row []byte) error {
		var err error
		if change == ChangeDelete {
			_, err = w.Delete(ctx, row)
		} else {
			_, err = w.Upsert(ctx, row)
		}
		return err
	}}, nil
}

// ImportOptions are the options of an import.
type ImportOptions struct {
	// Concurrency is the number of parsing goroutines.
	Concurrency int
	// SkipBad: skip lines that do not parse or fit the schema (counted,
	// and reported to OnBad) instead of stopping at the first.
	SkipBad bool
	// OnBad, with SkipBad, gets each skipped line's number and error.
	OnBad func(line int, err error)
}

// ImportCounts are an import's rows so far, by what they did, and the
// bytes of the lines written; safe to read while it runs.
type ImportCounts struct {
	Writes, Deletes, Skipped, Bytes atomic.Int64
}

// Import loads JSON lines into a table: appends to a log table, upserts
// (and, by their _change, deletes) into a primary-key table. Lines are
// parsed by Concurrency goroutines and written in input order through one
// writer of the table, whose per-bucket senders write the buckets in
// parallel with acks=all, idempotently, holding a bounded buffer.
type Import struct {
	Counts ImportCounts

	w       importWriter
	o       ImportOptions
	parsers []*importParser
}

// NewImport prepares an import into tbl.
func NewImport(tbl *client.Table, o ImportOptions) (*Import, error) {
	w, err := newImportWriter(tbl)
	if err != nil {
		return nil, err
	}
	im := &Import{w: w, o: o, parsers: make([]*importParser, o.Concurrency)}
	for i := range im.parsers {
		if im.parsers[i], err = newImportParser(tbl, o.SkipBad); err != nil {
			return nil, err
		}
	}
	return im, nil
}

// Run writes the lines of in until it ends, a bad line (without SkipBad),
// a read error or ctx stops it; rows handed to the writer may still be on
// their way: Close waits for them.
func (im *Import) Run(ctx context.Context, in io.Reader) error {
	workers := make([]*importWorker, len(im.parsers))
	for i := range workers {
		workers[i] = &importWorker{in: make(chan *importChunk, importChunkQueue), out: make(chan *importChunk, importChunkQueue)}
	}
	feeder := &importFeeder{w: im.w, skipBad: im.o.SkipBad, counts: &im.Counts, onBad: func(b badLine) {
		if im.o.OnBad != nil {
			im.o.OnBad(b.line, b.err)
		}
	}}
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { readChunks(pctx, in, workers) })
	for i, wk := range workers {
		wg.Go(func() { wk.run(pctx, im.parsers[i]) })
	}
	err := feeder.run(pctx, workers)
	cancel()
	wg.Wait()
	return err
}

// Close sends what is buffered and waits for every acknowledgement.
func (im *Import) Close(ctx context.Context) error { return im.w.close(ctx) }

// Stats are the writer's counts of rows by outcome.
func (im *Import) Stats() client.WriterStats { return im.w.stats() }
