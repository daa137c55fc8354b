package tableprop

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	log3 := Table{Replication: 3}
	log1 := Table{Replication: 1}
	pk3 := Table{Replication: 3, PrimaryKey: true}
	tests := []struct {
		name    string
		props   map[string]string
		table   Table
		want    Values
		wantErr string // a substring of the error; "" for success
	}{
		{"defaults, log, replication 3", nil, log3, Values{MinInsyncReplicas: 2}, ""},
		{"defaults, log, replication 1", nil, log1, Values{MinInsyncReplicas: 1}, ""},
		{"defaults, primary key", nil, pk3,
			Values{MinInsyncReplicas: 2, MergeEngine: "last_row", ChangelogImage: "full", DeleteBehavior: "allow"}, ""},
		{"min.insync.replicas = replication", map[string]string{"min.insync.replicas": "3"}, log3, Values{MinInsyncReplicas: 3}, ""},
		{"min.insync.replicas not a number", map[string]string{"min.insync.replicas": "abc"}, log3, Values{}, "from 1 to the replication factor 3"},
		{"min.insync.replicas over replication", map[string]string{"min.insync.replicas": "5"}, log1, Values{}, "from 1 to the replication factor 1"},
		{"min.insync.replicas zero", map[string]string{"min.insync.replicas": "0"}, log3, Values{}, "from 1"},
		{"unknown property", map[string]string{"merge-engne": "first_row"}, pk3, Values{}, `"merge-engne": unknown property`},
		{"bad enum", map[string]string{"merge-engine": "newest"}, pk3, Values{}, "want one of last_row, first_row, versioned"},
		{"enum case", map[string]string{"merge-engine": "FIRST_ROW", "changelog.image": "WAL"}, pk3,
			Values{MinInsyncReplicas: 2, MergeEngine: "first_row", ChangelogImage: "wal", DeleteBehavior: "allow"}, ""},
		{"primary-key property on a log table", map[string]string{"delete.behavior": "ignore"}, log3, Values{}, "primary-key tables only"},
		{"versioned without column", map[string]string{"merge-engine": "versioned"}, pk3, Values{}, "required by merge-engine=versioned"},
		{"column without versioned", map[string]string{"merge-engine.version-column": "v"}, pk3, Values{}, "only for merge-engine=versioned"},
		{"versioned", map[string]string{"merge-engine": "versioned", "merge-engine.version-column": "v"}, pk3,
			Values{MinInsyncReplicas: 2, MergeEngine: "versioned", ChangelogImage: "full", DeleteBehavior: "allow", VersionColumn: "v"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.props, tt.table)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %+v, %v; want an ErrInvalid with %q", got, err, tt.wantErr)
				}
				return
			}
			if want := withDefaults(tt.want, tt.table); err != nil || got != want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

// TestParseFirstErrorIsDeterministic: with several bad properties the one
// reported is the first by name, whatever the map order.
func TestParseFirstErrorIsDeterministic(t *testing.T) {
	props := map[string]string{"zz": "1", "aa": "1", "min.insync.replicas": "x", "bb": "2"}
	for range 20 {
		_, err := Parse(props, Table{Replication: 3})
		var pe *Error
		if !errors.As(err, &pe) || pe.Property != "aa" {
			t.Fatalf("Parse error = %v; want one about aa", err)
		}
	}
}

func TestRegistryIsSortedAndValidListsAll(t *testing.T) {
	ps := Properties()
	for i := 1; i < len(ps); i++ {
		if ps[i-1].Name >= ps[i].Name {
			t.Fatalf("registry not sorted: %s before %s", ps[i-1].Name, ps[i].Name)
		}
	}
	valid := Valid()
	for _, p := range ps {
		if !strings.Contains(valid, p.Name+" (") {
			t.Errorf("Valid() = %q lacks %s", valid, p.Name)
		}
		if p.Description == "" || p.Accepts() == "" {
			t.Errorf("property %s has no description or accepted values", p.Name)
		}
	}
	enumerated := slices.IndexFunc(ps, func(p Property) bool { return len(p.Values) > 0 })
	ps[enumerated].Values[0] = "mutated"
	if strings.Contains(Valid(), "mutated") {
		t.Fatal("Properties hands out the registry itself")
	}
}

// TestParseStored: stored tables keep working where their properties'
// meaning is clear, and only values no node can read are refused.
func TestParseStored(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		table   Table
		want    Values
		wantErr string
	}{
		{"unknown property ignored", map[string]string{"merge-engne": "first_row", "table.log.ttl": "7d"}, Table{Replication: 3, PrimaryKey: true},
			Values{MinInsyncReplicas: 2, MergeEngine: "last_row", ChangelogImage: "full", DeleteBehavior: "allow"}, ""},
		{"primary-key property on a log table ignored", map[string]string{"merge-engine": "first_row"}, Table{Replication: 1}, Values{MinInsyncReplicas: 1}, ""},
		{"min.insync.replicas above replication is every replica", map[string]string{"min.insync.replicas": "5"}, Table{Replication: 2}, Values{MinInsyncReplicas: 2}, ""},
		{"min.insync.replicas not a number", map[string]string{"min.insync.replicas": "abc"}, Table{Replication: 1}, Values{}, `min.insync.replicas="abc"`},
		{"min.insync.replicas zero", map[string]string{"min.insync.replicas": "0"}, Table{Replication: 1}, Values{}, "min.insync.replicas"},
		{"unknown merge engine", map[string]string{"merge-engine": "newest"}, Table{Replication: 1, PrimaryKey: true}, Values{}, "want one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStored(tt.props, tt.table)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStored = %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			want := withDefaults(tt.want, tt.table)
			want.LogTTL = 0            // tables from before log.ttl keep their records (TestParseStoredLogTTL)
			want.LogFormat = FormatRow // and their row batches (TestLogFormat)
			if err != nil || got != want {
				t.Fatalf("ParseStored = %+v, %v; want %+v", got, err, want)
			}
		})
	}
}
