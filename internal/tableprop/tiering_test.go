package tableprop

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// withDefaults fills the tiering values a test case leaves zero with their
// defaults, so cases about other properties need not spell them out.
func withDefaults(v Values, t Table) Values {
	if v.LogSegmentBytes == 0 {
		v.LogSegmentBytes = DefaultLogSegmentBytes
	}
	if v.LogTTL == 0 {
		v.LogTTL = DefaultLogTTL
	}
	if v.LogLocalSegments == 0 {
		v.LogLocalSegments = DefaultLogLocalSegments
	}
	if t.PrimaryKey && v.KVSnapshotInterval == 0 {
		v.KVSnapshotInterval = DefaultKVSnapshotInterval
	}
	if t.PrimaryKey && v.KVSnapshotRetained == 0 {
		v.KVSnapshotRetained = DefaultKVSnapshotRetained
	}
	if v.LogFormat == "" {
		v.LogFormat = FormatArrow
		if t.PrimaryKey {
			v.LogFormat = FormatRow
		}
	}
	if v.LogCompression == "" {
		v.LogCompression, v.LogCompressionLevel = CompressionZstd, DefaultLogCompressionLevel
	}
	if v.DataLakeFormat == "" {
		v.DataLakeFormat, v.DataLakeFreshness, v.DataLakeRetention = LakeIceberg, DefaultDataLakeFreshness, DefaultDataLakeRetention
	}
	return v
}

func TestParseTiering(t *testing.T) {
	log3 := Table{Replication: 3}
	pk3 := Table{Replication: 3, PrimaryKey: true}
	tests := []struct {
		name    string
		props   map[string]string
		table   Table
		check   func(Values) bool
		wantErr string
	}{
		{"segment bytes plain", map[string]string{LogSegmentBytes: "65536"}, log3, func(v Values) bool { return v.LogSegmentBytes == 64<<10 }, ""},
		{"segment bytes MiB", map[string]string{LogSegmentBytes: "8MiB"}, log3, func(v Values) bool { return v.LogSegmentBytes == 8<<20 }, ""},
		{"segment bytes gib case", map[string]string{LogSegmentBytes: "1gib"}, log3, func(v Values) bool { return v.LogSegmentBytes == 1<<30 }, ""},
		{"segment bytes too small", map[string]string{LogSegmentBytes: "1KiB"}, log3, nil, "from 64KiB to 1GiB"},
		{"segment bytes too large", map[string]string{LogSegmentBytes: "2GiB"}, log3, nil, "from 64KiB to 1GiB"},
		{"segment bytes garbage", map[string]string{LogSegmentBytes: "lots"}, log3, nil, "from 64KiB to 1GiB"},
		{"ttl days", map[string]string{LogTTL: "3d"}, log3, func(v Values) bool { return v.LogTTL == 72*time.Hour }, ""},
		{"ttl duration", map[string]string{LogTTL: "90s"}, log3, func(v Values) bool { return v.LogTTL == 90*time.Second }, ""},
		{"ttl forever", map[string]string{LogTTL: "Forever"}, log3, func(v Values) bool { return v.LogTTL == 0 }, ""},
		{"ttl below a second", map[string]string{LogTTL: "10ms"}, log3, nil, "at least 1s"},
		{"ttl negative", map[string]string{LogTTL: "-1h"}, log3, nil, "at least 1s"},
		{"local segments", map[string]string{LogLocalSegments: "5"}, log3, func(v Values) bool { return v.LogLocalSegments == 5 }, ""},
		{"local segments zero", map[string]string{LogLocalSegments: "0"}, log3, nil, "from 1 to"},
		{"local ttl", map[string]string{LogLocalTTL: "1h"}, log3, func(v Values) bool { return v.LogLocalTTL == time.Hour }, ""},
		{"local ttl default none", nil, log3, func(v Values) bool { return v.LogLocalTTL == 0 }, ""},
		{"snapshot interval", map[string]string{KVSnapshotInterval: "2s"}, pk3, func(v Values) bool { return v.KVSnapshotInterval == 2*time.Second }, ""},
		{"snapshot retained", map[string]string{KVSnapshotRetained: "3"}, pk3, func(v Values) bool { return v.KVSnapshotRetained == 3 }, ""},
		{"snapshot retained too many", map[string]string{KVSnapshotRetained: "101"}, pk3, nil, "from 1 to 100"},
		{"snapshot property on a log table", map[string]string{KVSnapshotInterval: "1m"}, log3, nil, "primary-key tables only"},
		{"log table has no snapshots", nil, log3, func(v Values) bool { return v.KVSnapshotInterval == 0 && v.KVSnapshotRetained == 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.props, tt.table)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Fatalf("Parse = %+v, %v", got, err)
			}
		})
	}
}

// TestParseByChecksVersion: a table checked by an earlier create-table
// version does not know the properties introduced after it, so a replayed
// command is refused as it was when first applied.
func TestParseByChecksVersion(t *testing.T) {
	props := map[string]string{LogTTL: "1d"}
	if _, err := Parse(props, Table{Replication: 1, Checks: checksRegistry}); err == nil || !strings.Contains(err.Error(), "unknown property") {
		t.Fatalf("version 1 took log.ttl: %v", err)
	}
	v, err := Parse(props, Table{Replication: 1, Checks: checksTiering})
	if err != nil || v.LogTTL != 24*time.Hour {
		t.Fatalf("version 2: %+v, %v", v, err)
	}
	if v, err := Parse(props, Table{Replication: 1}); err != nil || v.LogTTL != 24*time.Hour {
		t.Fatalf("latest: %+v, %v", v, err)
	}
}

// TestParseStoredLogTTL: a stored table created before log.ttl existed
// (its record's checks version below the tiering one, or unrecorded) and
// without the property keeps every record, as it did when it was created;
// a table created since gets the 7-day default, and one that sets log.ttl
// gets what it set, whenever it was created.
func TestParseStoredLogTTL(t *testing.T) {
	for _, tt := range []struct {
		name    string
		props   map[string]string
		created uint32
		want    time.Duration
	}{
		{"stored before the registry", nil, 0, 0},
		{"stored by the registry's first version", nil, checksRegistry, 0},
		{"primary-key table stored before log.ttl", nil, checksRegistry, 0},
		{"created since log.ttl", nil, checksTiering, DefaultLogTTL},
		{"created by a later version", nil, LatestChecks + 1, DefaultLogTTL},
		{"set, stored before the registry", map[string]string{LogTTL: "1d"}, 0, 24 * time.Hour},
		{"set forever, created since", map[string]string{LogTTL: Forever}, checksTiering, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			table := Table{Replication: 3, CreatedChecks: tt.created, PrimaryKey: strings.HasPrefix(tt.name, "primary-key")}
			v, err := ParseStored(tt.props, table)
			if err != nil || v.LogTTL != tt.want {
				t.Fatalf("ParseStored(%v, created under %d) log.ttl = %v, %v; want %v", tt.props, tt.created, v.LogTTL, err, tt.want)
			}
			if v.LogSegmentBytes != DefaultLogSegmentBytes {
				t.Fatalf("log.segment.bytes %d: only log.ttl keeps its value from before", v.LogSegmentBytes)
			}
		})
	}
	// A new table gets the default whatever CreatedChecks says: Parse
	// reads a table being created.
	if v, err := Parse(nil, Table{Replication: 3}); err != nil || v.LogTTL != DefaultLogTTL {
		t.Fatalf("Parse of a new table: log.ttl %v, %v; want %v", v.LogTTL, err, DefaultLogTTL)
	}
}
