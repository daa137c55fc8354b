package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// exportOutput is where an export writes: stdout, or a temporary file beside
// the named one that commit renames to it once the export is complete, so
// that a failed or interrupted export leaves no half-written file under the
// name (and an earlier file of that name as it was).
type exportOutput struct {
	w    io.Writer
	f    *os.File // nil: stdout
	path string   // the file's name
}

func openExportOutput(env *cliEnv, path string) (*exportOutput, error) {
	if path == "" || path == "-" {
		return &exportOutput{w: env.stdout}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp's 0600 is for secrets
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	return &exportOutput{w: f, f: f, path: path}, nil
}

// commit makes the file durable and gives it its name.
func (o *exportOutput) commit() error {
	if o.f == nil {
		return nil
	}
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.f.Name())
		return fmt.Errorf("--file %s: %w", o.path, err)
	}
	return nil
}

// abort removes the temporary file.
func (o *exportOutput) abort() {
	if o.f != nil {
		o.f.Close()
		os.Remove(o.f.Name())
	}
}

// notWritten says, for an error message, that the file was not written.
func (o *exportOutput) notWritten() string {
	if o.f == nil {
		return ""
	}
	return fmt.Sprintf(" (%s not written)", o.path)
}
