package partition_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/floedb/floe/internal/partition"
)

func (r fakeRow) StringBytes(i int) []byte { return []byte(r[i].(string)) }

// TestAppendNameIsNameOfRowValues checks the writers' fast path against
// the rules: for any row, AppendName gives Name(RowValues(row)), or both
// refuse it.
func TestAppendNameIsNameOfRowValues(t *testing.T) {
	specs := []partition.Spec{newSpec(t, "dt", "region", "n"), newSpec(t, "region")}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.SampledFrom(specs).Draw(t, "spec")
		var region any = rapid.OneOf(
			rapid.Just(any(nil)),
			rapid.Map(rapid.String(), func(v string) any { return v }), // mostly valid, some not
			rapid.SampledFrom([]any{"", " eu", "eu ", "e/u", "e\x00u", "\xff", "eu\u00a0"}),
		).Draw(t, "region")
		days := rapid.OneOf(rapid.Int64Range(minDateDays-2, maxDateDays+2), rapid.Int64()).Draw(t, "dt")
		r := row(region, rapid.Int64().Draw(t, "n"), days)

		name, err := partition.AppendName(s, []byte("old"), r)
		values, wantErr := s.RowValues(nil, r)
		switch {
		case wantErr != nil && err == nil:
			t.Fatalf("AppendName(%v) = %q, RowValues refuses: %v", r, name, wantErr)
		case wantErr == nil && err != nil:
			t.Fatalf("AppendName(%v): %v; RowValues = %q", r, err, values)
		case err != nil && !errors.Is(err, partition.ErrInvalid):
			t.Fatalf("AppendName(%v): %v, not ErrInvalid", r, err)
		case err == nil && string(name) != "old"+s.Name(values):
			t.Fatalf("AppendName(%v) = %q, want %q", r, name, "old"+s.Name(values))
		}
		if err == nil { // the unchecked name of a valid row is the same
			if known, err := partition.AppendKnownName(s, []byte("old"), r); err != nil || string(known) != string(name) {
				t.Fatalf("AppendKnownName(%v) = %q, %v; AppendName gave %q", r, known, err, name)
			}
		}
	})
}
