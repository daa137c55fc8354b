package tableprop

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDataLake: the lake is off by default; enabled, its freshness and
// retention are durations (retention may be forever), its format iceberg
// only; tables read by a checks version before the lake do not know the
// properties.
func TestDataLake(t *testing.T) {
	tbl := Table{Replication: 3}
	tests := []struct {
		name      string
		props     map[string]string
		table     Table
		enabled   bool
		freshness time.Duration
		retention time.Duration
		wantErr   string
	}{
		{"off by default", nil, tbl, false, DefaultDataLakeFreshness, DefaultDataLakeRetention, ""},
		{"enabled", map[string]string{DataLakeEnabled: "TRUE", DataLakeFreshness: "10s", DataLakeFormat: "Iceberg"}, tbl, true, 10 * time.Second, DefaultDataLakeRetention, ""},
		{"primary-key table", map[string]string{DataLakeEnabled: "true"}, Table{Replication: 3, PrimaryKey: true}, true, DefaultDataLakeFreshness, DefaultDataLakeRetention, ""},
		{"retention forever", map[string]string{DataLakeRetention: "forever"}, tbl, false, DefaultDataLakeFreshness, 0, ""},
		{"retention in days", map[string]string{DataLakeRetention: "30d"}, tbl, false, DefaultDataLakeFreshness, 30 * 24 * time.Hour, ""},
		{"freshness under a second", map[string]string{DataLakeFreshness: "500ms"}, tbl, false, 0, 0, "at least 1s"},
		{"not a boolean", map[string]string{DataLakeEnabled: "yes"}, tbl, false, 0, 0, "want one of false, true"},
		{"another format", map[string]string{DataLakeFormat: "paimon"}, tbl, false, 0, 0, "want one of iceberg"},
		{"before the lake", map[string]string{DataLakeEnabled: "true"}, Table{Replication: 3, Checks: ChecksPartitions}, false, 0, 0, "unknown property"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse(tt.props, tt.table)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %+v, %v; want an ErrInvalid with %q", v, err, tt.wantErr)
				}
				return
			}
			if err != nil || v.DataLake != tt.enabled || v.DataLakeFormat != LakeIceberg || v.DataLakeFreshness != tt.freshness || v.DataLakeRetention != tt.retention {
				t.Fatalf("Parse = lake %v %q freshness %v retention %v, %v; want %v, %v, %v", v.DataLake, v.DataLakeFormat,
					v.DataLakeFreshness, v.DataLakeRetention, err, tt.enabled, tt.freshness, tt.retention)
			}
		})
	}
	if p, ok := Lookup(DataLakeEnabled, 0); !ok || !p.Mutable {
		t.Fatalf("datalake.enabled: %+v, %v; want a mutable property (ALTER TABLE turns the lake on)", p, ok)
	}
	if p, ok := Lookup(DataLakeFormat, 0); !ok || p.Mutable || p.Immutable == "" {
		t.Fatalf("datalake.format: %+v, %v; want an immutable property with its reason", p, ok)
	}
}
