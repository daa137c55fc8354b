package partition_test

import (
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below without a system zone database

	"pgregory.net/rapid"

	"github.com/floedb/floe/internal/partition"
)

var units = []partition.TimeUnit{partition.Year, partition.Quarter, partition.Month, partition.Day, partition.Hour}

// loadLocation returns the named zone, or skips t: the daylight-saving
// cases need the zone's rules, which come from the system's zone database
// or, as this package's tests import time/tzdata, the one built in.
func loadLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no rules for %s, so no daylight-saving cases: %v", name, err)
	}
	return loc
}

func TestParseTimeUnit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want partition.TimeUnit
	}{
		{"YEAR", partition.Year},
		{"year", partition.Year},
		{"Quarter", partition.Quarter},
		{"month", partition.Month},
		{"dAy", partition.Day},
		{"HOUR", partition.Hour},
	} {
		got, err := partition.ParseTimeUnit(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTimeUnit(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, u := range units {
		if got, err := partition.ParseTimeUnit(u.String()); err != nil || got != u {
			t.Errorf("ParseTimeUnit(%q) = %v, %v", u.String(), got, err)
		}
	}
	for _, in := range []string{"", "WEEK", "days", " DAY", "DAY ", "H", "MINUTE"} {
		_, err := partition.ParseTimeUnit(in)
		wantInvalid(t, err, "want YEAR, QUARTER, MONTH, DAY or HOUR")
	}
	if got := partition.TimeUnit(9).String(); got != "TimeUnit(9)" {
		t.Errorf("TimeUnit(9).String() = %q", got)
	}
}

// at returns the time of a clock reading in loc.
func at(loc *time.Location, year int, month time.Month, day, hour, minute int) time.Time {
	return time.Date(year, month, day, hour, minute, 0, 0, loc)
}

func TestTimeUnitsUTC(t *testing.T) {
	ts := time.Date(2026, 12, 3, 17, 45, 10, 999, time.UTC)
	for _, tc := range []struct {
		unit          partition.TimeUnit
		value         string
		start, next   time.Time
		previous      time.Time
		previousValue string
		nextValue     string
	}{
		{partition.Year, "2026", at(time.UTC, 2026, 1, 1, 0, 0), at(time.UTC, 2027, 1, 1, 0, 0), at(time.UTC, 2025, 1, 1, 0, 0), "2025", "2027"},
		{partition.Quarter, "2026-Q4", at(time.UTC, 2026, 10, 1, 0, 0), at(time.UTC, 2027, 1, 1, 0, 0), at(time.UTC, 2026, 7, 1, 0, 0), "2026-Q3", "2027-Q1"},
		{partition.Month, "2026-12", at(time.UTC, 2026, 12, 1, 0, 0), at(time.UTC, 2027, 1, 1, 0, 0), at(time.UTC, 2026, 11, 1, 0, 0), "2026-11", "2027-01"},
		{partition.Day, "2026-12-03", at(time.UTC, 2026, 12, 3, 0, 0), at(time.UTC, 2026, 12, 4, 0, 0), at(time.UTC, 2026, 12, 2, 0, 0), "2026-12-02", "2026-12-04"},
		{partition.Hour, "2026-12-03T17", at(time.UTC, 2026, 12, 3, 17, 0), at(time.UTC, 2026, 12, 3, 18, 0), at(time.UTC, 2026, 12, 3, 16, 0), "2026-12-03T16", "2026-12-03T18"},
	} {
		t.Run(tc.unit.String(), func(t *testing.T) {
			u := tc.unit
			if got := u.Format(ts); got != tc.value {
				t.Errorf("Format = %q, want %q", got, tc.value)
			}
			start := u.Start(ts)
			if !start.Equal(tc.start) {
				t.Errorf("Start = %v, want %v", start, tc.start)
			}
			if got, ok := u.Parse(tc.value, time.UTC); !ok || !got.Equal(tc.start) {
				t.Errorf("Parse(%q) = %v, %v; want %v", tc.value, got, ok, tc.start)
			}
			for n, want := range map[int]time.Time{1: tc.next, -1: tc.previous, 0: tc.start} {
				if got := u.Add(start, n); !got.Equal(want) {
					t.Errorf("Add(start, %d) = %v, want %v", n, got, want)
				}
			}
			if got := u.Format(tc.next); got != tc.nextValue {
				t.Errorf("Format(next) = %q, want %q", got, tc.nextValue)
			}
			if got := u.Format(tc.previous); got != tc.previousValue {
				t.Errorf("Format(previous) = %q, want %q", got, tc.previousValue)
			}
		})
	}
}

func TestQuarters(t *testing.T) {
	for month := time.January; month <= time.December; month++ {
		ts := at(time.UTC, 2026, month, 15, 12, 0)
		q := (int(month)-1)/3 + 1
		want := "2026-Q" + strconv.Itoa(q)
		if got := partition.Quarter.Format(ts); got != want {
			t.Errorf("Format(%v) = %q, want %q", ts, got, want)
		}
		if got, wantStart := partition.Quarter.Start(ts), at(time.UTC, 2026, time.Month(3*q-2), 1, 0, 0); !got.Equal(wantStart) {
			t.Errorf("Start(%v) = %v, want %v", ts, got, wantStart)
		}
	}
}

func TestTimeUnitParseRefusesOtherForms(t *testing.T) {
	for _, tc := range []struct {
		unit   partition.TimeUnit
		values []string
	}{
		{partition.Year, []string{"", "26", "02026", "+2026", "2026-12", "2026 ", "year"}},
		{partition.Quarter, []string{"2026-Q0", "2026-Q5", "2026-q4", "2026-4", "2026-Q4x", "2026-Q04", "26-Q4", "2026", "+026-Q4"}},
		{partition.Month, []string{"2026-13", "2026-00", "2026-1", "2026-12-03", "2026/12", "2026"}},
		{partition.Day, []string{"2026-02-30", "2026-12-3", "2026-12-03T17", "20261203", "2026-12"}},
		{partition.Hour, []string{"2026-12-03T24", "2026-12-03T7", "2026-12-03 17", "2026-12-03T17:00", "2026-12-03", "2026-12-03t17"}},
		{partition.TimeUnit(0), []string{"2026", "2026-12-03T17"}},
	} {
		for _, v := range tc.values {
			if got, ok := tc.unit.Parse(v, time.UTC); ok {
				t.Errorf("%v Parse(%q) = %v, want refused", tc.unit, v, got)
			}
		}
	}
}

// TestTimeUnitsDaylightSaving walks through the days Europe/Berlin sets
// its clocks forward (2026-03-29, 02:00 CET becomes 03:00 CEST) and back
// (2026-10-25, 03:00 CEST becomes 02:00 CET, so 02:00-03:00 passes twice).
func TestTimeUnitsDaylightSaving(t *testing.T) {
	berlin := loadLocation(t, "Europe/Berlin")
	utc := func(month time.Month, day, hour, minute int) time.Time {
		return at(time.UTC, 2026, month, day, hour, minute)
	}

	t.Run("hours of the day the clock skips 02", func(t *testing.T) {
		wantValues := []string{"2026-03-29T00", "2026-03-29T01", "2026-03-29T03", "2026-03-29T04"}
		wantStarts := []time.Time{utc(3, 28, 23, 0), utc(3, 29, 0, 0), utc(3, 29, 1, 0), utc(3, 29, 2, 0)}
		s := partition.Hour.Start(utc(3, 28, 23, 30).In(berlin))
		for i := range wantValues {
			if got := partition.Hour.Format(s); got != wantValues[i] || !s.Equal(wantStarts[i]) {
				t.Fatalf("hour %d: %v (%s), want %v (%s)", i, s, got, wantStarts[i], wantValues[i])
			}
			s = partition.Hour.Add(s, 1)
		}
		if got, ok := partition.Hour.Parse("2026-03-29T02", berlin); ok {
			t.Errorf("Parse of the skipped hour = %v, want refused", got)
		}
		if got := partition.Hour.Add(utc(3, 29, 1, 0).In(berlin), -1); !got.Equal(utc(3, 29, 0, 0)) {
			t.Errorf("the hour before 03 CEST starts at %v, want 01 CET", got)
		}
	})

	t.Run("hours of the day the clock shows 02 twice", func(t *testing.T) {
		// 02 CEST and 02 CET have one value, so they are one period of two
		// hours, from the first pass.
		first, second := utc(10, 25, 0, 30).In(berlin), utc(10, 25, 1, 30).In(berlin)
		for _, ts := range []time.Time{first, second} {
			if got := partition.Hour.Format(ts); got != "2026-10-25T02" {
				t.Errorf("Format(%v) = %q", ts, got)
			}
			if got := partition.Hour.Start(ts); !got.Equal(utc(10, 25, 0, 0)) {
				t.Errorf("Start(%v) = %v, want 02:00 CEST", ts, got)
			}
		}
		if got, ok := partition.Hour.Parse("2026-10-25T02", berlin); !ok || !got.Equal(utc(10, 25, 0, 0)) {
			t.Errorf("Parse(2026-10-25T02) = %v, %v; want 02:00 CEST", got, ok)
		}
		wantValues := []string{"2026-10-25T01", "2026-10-25T02", "2026-10-25T03", "2026-10-25T04"}
		wantStarts := []time.Time{utc(10, 24, 23, 0), utc(10, 25, 0, 0), utc(10, 25, 2, 0), utc(10, 25, 3, 0)}
		s := utc(10, 24, 23, 0).In(berlin)
		for i := range wantValues {
			if got := partition.Hour.Format(s); got != wantValues[i] || !s.Equal(wantStarts[i]) {
				t.Fatalf("hour %d: %v (%s), want %v (%s)", i, s, got, wantStarts[i], wantValues[i])
			}
			s = partition.Hour.Add(s, 1)
		}
		if got := partition.Hour.Add(utc(10, 25, 2, 0).In(berlin), -1); !got.Equal(utc(10, 25, 0, 0)) {
			t.Errorf("the hour before 03 CET starts at %v, want 02 CEST", got)
		}
	})

	t.Run("hour periods of a day", func(t *testing.T) {
		for day, want := range map[time.Time]int{at(berlin, 2026, 3, 29, 12, 0): 23, at(berlin, 2026, 10, 25, 12, 0): 24, at(berlin, 2026, 7, 1, 12, 0): 24} {
			hours := 0
			for s := partition.Day.Start(day); partition.Day.Format(s) == partition.Day.Format(day); s = partition.Hour.Add(s, 1) {
				hours++
			}
			if hours != want {
				t.Errorf("%s has %d hour periods, want %d", partition.Day.Format(day), hours, want)
			}
		}
	})

	t.Run("days of 23 and 25 hours", func(t *testing.T) {
		for day, want := range map[time.Time]time.Duration{at(berlin, 2026, 3, 29, 12, 0): 23 * time.Hour, at(berlin, 2026, 10, 25, 12, 0): 25 * time.Hour} {
			start := partition.Day.Start(day)
			if !start.Equal(at(berlin, day.Year(), day.Month(), day.Day(), 0, 0)) {
				t.Errorf("Start(%v) = %v, want midnight", day, start)
			}
			if got := partition.Day.Add(start, 1).Sub(start); got != want {
				t.Errorf("%v: a day of %v, want %v", day, got, want)
			}
			if got := partition.Day.Add(partition.Day.Add(start, 1), -1); !got.Equal(start) {
				t.Errorf("%v: Add(Add(start, 1), -1) = %v", day, got)
			}
		}
	})

	t.Run("a year of hours", func(t *testing.T) {
		// 365 days of 24 clock hours, less the one skipped in March.
		start := partition.Year.Start(at(berlin, 2026, 6, 1, 0, 0))
		next := partition.Year.Add(start, 1)
		if got := partition.Hour.Add(start, 365*24-1); !got.Equal(next) {
			t.Errorf("8759 hours after %v: %v, want %v", start, got, next)
		}
		if got := partition.Hour.Add(next, -(365*24 - 1)); !got.Equal(start) {
			t.Errorf("8759 hours before %v: %v, want %v", next, got, start)
		}
		s := start
		for range 365*24 - 1 {
			s = partition.Hour.Add(s, 1)
		}
		if !s.Equal(next) {
			t.Errorf("8759 hours one at a time after %v: %v, want %v", start, s, next)
		}
	})
}

// TestDayWhoseMidnightIsSkipped: America/Sao_Paulo set its clocks from
// 00:00 to 01:00 on 2018-11-04, so that day began at 01:00; time.Date
// takes the skipped midnight back to 23:00 the day before.
func TestDayWhoseMidnightIsSkipped(t *testing.T) {
	saoPaulo := loadLocation(t, "America/Sao_Paulo")
	noon := at(saoPaulo, 2018, 11, 4, 12, 0)
	dayStart := time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC).In(saoPaulo) // 01:00 -02
	if got := partition.Day.Format(noon); got != "2018-11-04" {
		t.Errorf("Format(%v) = %q", noon, got)
	}
	if got := partition.Day.Start(noon); !got.Equal(dayStart) {
		t.Errorf("Start(%v) = %v, want %v", noon, got, dayStart)
	}
	if got, ok := partition.Day.Parse("2018-11-04", saoPaulo); !ok || !got.Equal(dayStart) {
		t.Errorf("Parse(2018-11-04) = %v, %v; want %v", got, ok, dayStart)
	}
	dayBefore := partition.Day.Start(at(saoPaulo, 2018, 11, 3, 12, 0))
	if got := partition.Day.Add(dayBefore, 1); !got.Equal(dayStart) {
		t.Errorf("the day after %v starts at %v, want %v", dayBefore, got, dayStart)
	}
	if got := partition.Day.Add(dayStart, -1); !got.Equal(dayBefore) {
		t.Errorf("the day before %v starts at %v, want %v", dayStart, got, dayBefore)
	}
	if got := partition.Hour.Format(dayStart); got != "2018-11-04T01" {
		t.Errorf("Hour.Format(%v) = %q", dayStart, got)
	}
}

// genTime draws an instant of the years 1900 to 2100 in loc, half of them
// within three hours of one of the zone's changes of offset.
func genTime(t *rapid.T, loc *time.Location) time.Time {
	lo, hi := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	ts := time.Unix(rapid.Int64Range(lo, hi).Draw(t, "seconds"), rapid.Int64Range(0, 999_999_999).Draw(t, "nanoseconds")).In(loc)
	if rapid.Bool().Draw(t, "near a change") {
		if _, end := ts.ZoneBounds(); !end.IsZero() {
			ts = end.Add(time.Duration(rapid.Int64Range(-3*3600, 3*3600).Draw(t, "from the change")) * time.Second)
		}
	}
	return ts
}

// zones for the property tests: UTC; Berlin's daylight saving; Sao Paulo,
// whose clocks changed at midnight; Lord Howe Island, whose change is half
// an hour; Kolkata, half an hour off UTC all year.
func zones(t *testing.T) []*time.Location {
	return []*time.Location{time.UTC, loadLocation(t, "Europe/Berlin"), loadLocation(t, "America/Sao_Paulo"),
		loadLocation(t, "Australia/Lord_Howe"), loadLocation(t, "Asia/Kolkata")}
}

// TestTimeUnitPeriods checks, for any instant, that its period is a run of
// instants with one value: Start is the first, Add(Start, 1) the first
// after it, Parse of the value gives Start back, and Add counts periods.
func TestTimeUnitPeriods(t *testing.T) {
	locs := zones(t)
	rapid.Check(t, func(t *rapid.T) {
		u := rapid.SampledFrom(units).Draw(t, "unit")
		ts := genTime(t, rapid.SampledFrom(locs).Draw(t, "zone"))
		value := u.Format(ts)
		start := u.Start(ts)
		switch {
		case start.After(ts):
			t.Fatalf("Start(%v) = %v, after it", ts, start)
		case u.Format(start) != value:
			t.Fatalf("Start(%v) = %v, of value %q, not %q", ts, start, u.Format(start), value)
		case u.Format(start.Add(-time.Nanosecond)) == value:
			t.Fatalf("Start(%v) = %v, but the instant before it has the value %q too", ts, start, value)
		case !u.Start(start).Equal(start):
			t.Fatalf("Start(Start(%v)) = %v, not %v", ts, u.Start(start), start)
		}
		if got, ok := u.Parse(value, ts.Location()); !ok || !got.Equal(start) {
			t.Fatalf("Parse(%q) = %v, %v; want %v", value, got, ok, start)
		}
		next := u.Add(start, 1)
		switch {
		case !next.After(ts):
			t.Fatalf("Add(%v, 1) = %v, not after %v", start, next, ts)
		case u.Format(next) <= value:
			t.Fatalf("Add(%v, 1) = %v, of value %q, not after %q", start, next, u.Format(next), value)
		case u.Format(next.Add(-time.Nanosecond)) != value:
			t.Fatalf("Add(%v, 1) = %v, but the instant before it has the value %q, not %q", start, next, u.Format(next.Add(-time.Nanosecond)), value)
		case !u.Add(next, -1).Equal(start):
			t.Fatalf("Add(Add(%v, 1), -1) = %v", start, u.Add(next, -1))
		}
		a, b := rapid.IntRange(-60, 60).Draw(t, "a"), rapid.IntRange(-60, 60).Draw(t, "b")
		if got, want := u.Add(u.Add(start, a), b), u.Add(start, a+b); !got.Equal(want) {
			t.Fatalf("Add(Add(%v, %d), %d) = %v, Add(%v, %d) = %v", start, a, b, got, start, a+b, want)
		}
	})
}

// TestTimeUnitFormatsSortAsTime checks that values compare as text as
// their periods do in time, over the years 0001 to 9998.
func TestTimeUnitFormatsSortAsTime(t *testing.T) {
	locs := []*time.Location{time.UTC, loadLocation(t, "Europe/Berlin")}
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	rapid.Check(t, func(t *rapid.T) {
		u := rapid.SampledFrom(units).Draw(t, "unit")
		loc := rapid.SampledFrom(locs).Draw(t, "zone")
		t1 := time.Unix(rapid.Int64Range(lo, hi).Draw(t, "t1"), 0).In(loc)
		t2 := t1.Add(time.Duration(rapid.Int64Range(-1e6, 1e6).Draw(t, "seconds to t2")) * time.Second)
		if rapid.Bool().Draw(t, "far apart") {
			t2 = time.Unix(rapid.Int64Range(lo, hi).Draw(t, "t2"), 0).In(loc)
		}
		v1, v2 := u.Format(t1), u.Format(t2)
		if got, want := strings.Compare(v1, v2), u.Start(t1).Compare(u.Start(t2)); got != want {
			t.Fatalf("%v %q and %v %q compare as %d, their periods as %d", t1, v1, t2, v2, got, want)
		}
	})
}

// FuzzTimeUnitParse checks that what Parse reads is the value of the
// period it returns.
func FuzzTimeUnitParse(f *testing.F) {
	for _, seed := range []string{"2026", "2026-Q4", "2026-12", "2026-12-03", "2026-12-03T17", "2026-03-29T02", "2026-10-25T02", "+026-Q1"} {
		f.Add(seed)
	}
	berlin := loadLocation(f, "Europe/Berlin")
	f.Fuzz(func(t *testing.T, value string) {
		for _, u := range units {
			for _, loc := range []*time.Location{time.UTC, berlin} {
				ts, ok := u.Parse(value, loc)
				if !ok {
					continue
				}
				if got := u.Format(ts); got != value {
					t.Fatalf("%v Parse(%q) = %v, whose value is %q", u, value, ts, got)
				}
				if !u.Start(ts).Equal(ts) {
					t.Fatalf("%v Parse(%q) = %v, not a period's start (%v)", u, value, ts, u.Start(ts))
				}
			}
		}
	})
}
