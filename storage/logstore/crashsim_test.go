package logstore

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// crash abandons the log the way a killed process would: no fsync, no
// recovery point, mappings dropped. Test-only.
func (l *Log) crash() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.job.stop()
	l.releaseAll()
}

// powerLoss follows what a log has fsynced, so a test can build the
// folders a power cut could leave, where a kill (crashCopy) leaves the
// page cache: each segment as of its last fsync, or as the page cache has
// it (the kernel may have written it back since), and the durable mark as
// last fsynced or any value written to it since. The files the log
// replaces atomically and durably (recovery point, epochs) are taken as
// they are, so a test keeps RecoveryPointInterval long enough that no
// cached checkpoint is written. Test-only; one appender at a time.
type powerLoss struct {
	t      testing.TB
	dir    string
	mu     sync.Mutex
	synced map[int64][]byte // segment base → its file at its last fsync
	marks  []int64          // the mark's possible values on disk
}

func newPowerLoss(t testing.TB, dir string) *powerLoss {
	return &powerLoss{t: t, dir: dir, synced: map[int64][]byte{}}
}

// fsync is the followed log's Config.FsyncFault: it takes the segment as
// the fsync about to run makes it durable.
func (p *powerLoss) fsync(base int64) error {
	data, err := os.ReadFile(segmentFile(p.dir, base))
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.synced[base] = data
	p.mu.Unlock()
	return nil
}

// follow starts following l's durable mark. Its value now is taken as on
// disk, as if written back (the worst case for a mark that may go down).
func (p *powerLoss) follow(l *Log) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	p.marks = []int64{l.mark.at}
	l.mark.observe = func(offset int64, synced bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if synced {
			p.marks = p.marks[:0]
		}
		p.marks = append(p.marks, offset)
	}
}

// images returns one folder for every state a power cut now could leave.
func (p *powerLoss) images() []string {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	type segState struct {
		base int64
		data []byte
	}
	// Every combination of segment states, then of marks.
	var combos [][]segState
	combos = append(combos, nil)
	for base, data := range p.synced {
		if _, err := os.Stat(segmentFile(p.dir, base)); err != nil {
			continue // removed: the folder is taken as it is
		}
		var next [][]segState
		for _, c := range combos {
			next = append(next, append(append([]segState(nil), c...), segState{base, data}))
			next = append(next, c) // as the page cache has it
		}
		combos = next
	}
	var out []string
	for _, c := range combos {
		for _, mark := range p.marks {
			dst := p.t.TempDir()
			entries, err := os.ReadDir(p.dir)
			if err != nil {
				p.t.Fatal(err)
			}
			for _, e := range entries {
				copyFile(p.t, filepath.Join(p.dir, e.Name()), filepath.Join(dst, e.Name()))
			}
			for _, s := range c {
				if err := os.WriteFile(segmentFile(dst, s.base), s.data, 0o644); err != nil {
					p.t.Fatal(err)
				}
			}
			if mark >= 0 {
				m, _, err := openDurableMark(dst, newMarkFiles(1))
				if err != nil {
					p.t.Fatal(err)
				}
				m.at = -1
				if err := m.set(mark); err != nil {
					p.t.Fatal(err)
				}
				m.close()
			} else if err := os.Remove(filepath.Join(dst, durableMarkFile)); err != nil && !os.IsNotExist(err) {
				p.t.Fatal(err)
			}
			out = append(out, dst)
		}
	}
	return out
}
