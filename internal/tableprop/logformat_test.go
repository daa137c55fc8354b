package tableprop

import (
	"errors"
	"strings"
	"testing"
)

// TestLogFormat: log tables are arrow from ChecksLogFormat on, row before
// it and when they say so; primary-key tables are row and refuse arrow;
// the compression and its level are checked.
func TestLogFormat(t *testing.T) {
	logT := Table{Replication: 3}
	pkT := Table{Replication: 3, PrimaryKey: true}
	tests := []struct {
		name    string
		props   map[string]string
		table   Table
		stored  bool
		format  string
		codec   string
		level   int
		wantErr string
	}{
		{"new log table", nil, logT, false, FormatArrow, CompressionZstd, 3, ""},
		{"new primary-key table", nil, pkT, false, FormatRow, CompressionZstd, 3, ""},
		{"log table asks for rows", map[string]string{LogFormat: "ROW"}, logT, false, FormatRow, CompressionZstd, 3, ""},
		{"lz4", map[string]string{LogCompression: "lz4", LogCompressionLevel: "9"}, logT, false, FormatArrow, CompressionLZ4, 9, ""},
		{"zstd level 22", map[string]string{LogCompressionLevel: "22"}, logT, false, FormatArrow, CompressionZstd, 22, ""},
		{"stored before the property", nil, Table{Replication: 3, CreatedChecks: checksTiering}, true, FormatRow, CompressionZstd, 3, ""},
		{"stored since the property", nil, Table{Replication: 3, CreatedChecks: ChecksLogFormat}, true, FormatArrow, CompressionZstd, 3, ""},
		{"stored before, altered to arrow", map[string]string{LogFormat: "arrow"}, Table{Replication: 3, CreatedChecks: checksTiering}, true,
			FormatArrow, CompressionZstd, 3, ""},
		{"primary key refuses arrow", map[string]string{LogFormat: "arrow"}, pkT, false, "", "", 0, "their changelogs"},
		{"unknown format", map[string]string{LogFormat: "parquet"}, logT, false, "", "", 0, "want one of arrow, row"},
		{"level 0", map[string]string{LogCompressionLevel: "0"}, logT, false, "", "", 0, "from 1 to 22"},
		{"level 23", map[string]string{LogCompressionLevel: "23"}, logT, false, "", "", 0, "from 1 to 22"},
		{"unknown before its version", map[string]string{LogFormat: "row"}, Table{Replication: 3, Checks: checksTiering}, false, "", "", 0, "unknown property"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parse := Parse
			if tt.stored {
				parse = ParseStored
			}
			v, err := parse(tt.props, tt.table)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse = %+v, %v; want an error with %q", v, err, tt.wantErr)
				}
				return
			}
			if err != nil || v.LogFormat != tt.format || v.LogCompression != tt.codec || v.LogCompressionLevel != tt.level {
				t.Fatalf("parse = %s %s %d, %v; want %s %s %d", v.LogFormat, v.LogCompression, v.LogCompressionLevel, err,
					tt.format, tt.codec, tt.level)
			}
		})
	}
}

// TestEveryPropertySaysWhetherItIsMutable: a property ALTER TABLE refuses
// carries the reason it is refused with.
func TestEveryPropertySaysWhetherItIsMutable(t *testing.T) {
	for _, p := range Properties() {
		if p.Mutable == (p.Immutable != "") {
			t.Errorf("property %s: Mutable %v with reason %q; want a reason exactly when immutable", p.Name, p.Mutable, p.Immutable)
		}
	}
	if _, ok := Lookup(LogFormat, checksTiering); ok {
		t.Error("Lookup knows log.format under a checks version before it")
	}
	if p, ok := Lookup(MergeEngine, 0); !ok || p.Mutable || !strings.Contains(p.Immutable, "merged") {
		t.Errorf("Lookup(merge-engine) = %+v, %v", p, ok)
	}
}
