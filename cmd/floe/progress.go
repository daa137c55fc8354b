package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressInterval is how often a progress line is redrawn: often enough
// to look alive, rarely enough to cost nothing and stay readable.
const progressInterval = 250 * time.Millisecond

// progressLine keeps one status line on a terminal up to date: redrawn in
// place every progressInterval while the work runs, erased by stop, so the
// summary printed after it starts on a clean line.
type progressLine struct {
	out    io.Writer
	render func(elapsed time.Duration) string
	start  time.Time

	mu    sync.Mutex // one write to out at a time
	width int        // of the line drawn last, to blank what a shorter one leaves

	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
}

// startProgress draws render's line on w every progressInterval until stop,
// when w is a terminal; otherwise it draws nothing and stop does nothing.
func startProgress(w io.Writer, render func(elapsed time.Duration) string) *progressLine {
	p := &progressLine{out: w, render: render, start: time.Now(), stopCh: make(chan struct{}), done: make(chan struct{})}
	if !isTerminal(w) {
		close(p.done)
		return p
	}
	go p.run()
	return p
}

func (p *progressLine) run() {
	defer close(p.done)
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			p.draw(p.render(time.Since(p.start)))
		case <-p.stopCh:
			p.erase()
			return
		}
	}
}

// stop stops the redrawing, erases the line and waits for both.
func (p *progressLine) stop() {
	p.stopOnce.Do(func() { close(p.stopCh) })
	<-p.done
}

// draw writes line over the one drawn before.
func (p *progressLine) draw(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pad := max(0, p.width-len(line))
	fmt.Fprintf(p.out, "\r%s%s", line, strings.Repeat(" ", pad))
	p.width = len(line)
}

// erase blanks the line and returns to its start.
func (p *progressLine) erase() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLocked()
}

func (p *progressLine) eraseLocked() {
	if p.width > 0 {
		fmt.Fprintf(p.out, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// printf writes a message line to out, on a line of its own: the progress
// line is erased first and drawn again at the next tick.
func (p *progressLine) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLocked()
	fmt.Fprintf(p.out, format, args...)
}

// isTerminal reports whether w is a terminal (a character device: also
// /dev/null, where a progress line goes unseen at no cost).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// rate is n per second over elapsed.
func rate(n int64, elapsed time.Duration) float64 {
	return float64(n) / max(elapsed.Seconds(), 1e-9)
}

// megabytes is n bytes in MB (10^6 bytes).
func megabytes(n int64) float64 { return float64(n) / 1e6 }
