package partition

import (
	"fmt"
	"strings"
	"time"
)

// TimeUnit is the period of an auto-partitioned table's partitions
// (auto-partition.time-unit). A partition's value is the period's start
// in the unit's format, ISO 8601 cut to the unit, so values sort as text
// in time order and a DAY value is a DATE's text.
type TimeUnit int

// The time units.
const (
	Year    TimeUnit = iota + 1 // "2026"
	Quarter                     // "2026-Q4"
	Month                       // "2026-12"
	Day                         // "2026-12-03"
	Hour                        // "2026-12-03T17"
)

var unitNames = map[TimeUnit]string{Year: "YEAR", Quarter: "QUARTER", Month: "MONTH", Day: "DAY", Hour: "HOUR"}

// ParseTimeUnit reads YEAR, QUARTER, MONTH, DAY or HOUR, in any case.
func ParseTimeUnit(s string) (TimeUnit, error) {
	for u, name := range unitNames {
		if strings.EqualFold(s, name) {
			return u, nil
		}
	}
	return 0, invalidf("time unit %.32q: want YEAR, QUARTER, MONTH, DAY or HOUR", s)
}

func (u TimeUnit) String() string {
	if name, ok := unitNames[u]; ok {
		return name
	}
	return fmt.Sprintf("TimeUnit(%d)", int(u))
}

// Start returns the start of the period t falls in, in t's location: the
// first instant at which the clock there shows the period. Where the zone
// changes at that moment the clock may skip the period's first reading
// (America/Sao_Paulo moved from 00:00 to 01:00: the day began at 01:00) or
// show it twice (Europe/Berlin shows 02:00-03:00 twice in October: one
// period, from the first pass). time.Date picks either instant of a
// repeated reading and moves a skipped one either way, so it alone would
// give a start after t, or on the day before.
func (u TimeUnit) Start(t time.Time) time.Time {
	value := u.Format(t)
	clock := u.clockStart(t)
	for {
		_, offset := t.Zone()
		s := clock.Add(-time.Duration(offset) * time.Second).In(t.Location())
		zoneStart, _ := t.ZoneBounds()
		if zoneStart.IsZero() || s.After(zoneStart) {
			return s // the clock showed the start in t's zone, and only there
		}
		before := zoneStart.Add(-time.Nanosecond)
		if u.Format(before) != value {
			return zoneStart // the period began with the zone
		}
		t = before // the zone before showed the period too
	}
}

// clockStart returns the clock reading at which t's period starts, as a
// UTC time standing for a reading of t's clock.
func (u TimeUnit) clockStart(t time.Time) time.Time {
	y, m, d := t.Date()
	switch u {
	case Year:
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	case Quarter:
		return time.Date(y, m-(m-1)%3, 1, 0, 0, 0, 0, time.UTC)
	case Month:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case Day:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
}

// startAt returns the start of the period whose clock reading starts at
// clock (as clockStart gives it) in loc or, where loc's clock skips that
// whole period, of the next one.
func (u TimeUnit) startAt(clock time.Time, loc *time.Location) time.Time {
	t := time.Date(clock.Year(), clock.Month(), clock.Day(), clock.Hour(), 0, 0, 0, loc)
	if u.clockStart(t).Before(clock) {
		// A reading the clock skips, moved back to before the change.
		_, t = t.ZoneBounds()
	}
	return u.Start(t)
}

// Add returns the start of the period n periods after the one starting at
// start (n may be negative). Periods are those the clock shows: an hour the
// clock skips is none and an hour it shows twice is one (its value names
// one partition), so a day has 24 hour periods, or 23, and Add(start, 1),
// Add(start, 2), ... are all different periods.
func (u TimeUnit) Add(start time.Time, n int) time.Time {
	s := u.Start(start)
	switch u {
	case Year:
		return u.startAt(u.clockStart(s).AddDate(n, 0, 0), s.Location())
	case Quarter:
		return u.startAt(u.clockStart(s).AddDate(0, 3*n, 0), s.Location())
	case Month:
		return u.startAt(u.clockStart(s).AddDate(0, n, 0), s.Location())
	case Day:
		return u.startAt(u.clockStart(s).AddDate(0, 0, n), s.Location())
	}
	return addHours(s, n)
}

// maxHourStep is the most hours addHours moves at once, well within a
// time.Duration (292 years).
const maxHourStep = 1 << 20

// addHours returns the start of the hour period n periods after the one
// starting at s. Within one offset of the zone every hour is a period an
// hour long, so it moves there by whole hours, and across a change of
// offset one period at a time.
func addHours(s time.Time, n int) time.Time {
	for n > 0 {
		if k := hoursOnInZone(s, n); k > 0 {
			s, n = s.Add(time.Duration(k)*time.Hour), n-k
			continue
		}
		s, n = Hour.startAt(Hour.clockStart(s).Add(time.Hour), s.Location()), n-1
	}
	for n < 0 {
		if k := hoursBackInZone(s, -n); k > 0 {
			s, n = s.Add(-time.Duration(k)*time.Hour), n+k
			continue
		}
		s, n = Hour.Start(s.Add(-time.Nanosecond)), n+1
	}
	return s
}

// onTheHour reports whether t's clock shows a whole hour.
func onTheHour(t time.Time) bool {
	return t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0
}

// hoursOnInZone returns how many hours, at most n, addHours may move on from
// s, an hour period's start, before the zone's next change of offset.
func hoursOnInZone(s time.Time, n int) int {
	if !onTheHour(s) {
		return 0
	}
	k := min(n, maxHourStep)
	if _, zoneEnd := s.ZoneBounds(); !zoneEnd.IsZero() {
		k = min(k, int((zoneEnd.Sub(s)-1)/time.Hour))
	}
	return k
}

// hoursBackInZone returns how many hours, at most n, addHours may move back
// from s, an hour period's start, staying after the zone's last change of
// offset and on a period's start: the first hours after a change may be
// the second pass of a repeated hour, whose period began before it.
func hoursBackInZone(s time.Time, n int) int {
	if !onTheHour(s) {
		return 0
	}
	k := min(n, maxHourStep)
	if zoneStart, _ := s.ZoneBounds(); !zoneStart.IsZero() {
		k = min(k, int(s.Sub(zoneStart)/time.Hour))
	}
	for ; k > 0; k-- {
		if back := s.Add(-time.Duration(k) * time.Hour); Hour.Start(back).Equal(back) {
			break
		}
	}
	return k
}

// Format returns the value of the period t falls in: t's clock, cut to the
// unit.
func (u TimeUnit) Format(t time.Time) string {
	switch u {
	case Year:
		return t.Format("2006")
	case Quarter:
		return fmt.Sprintf("%04d-Q%d", t.Year(), (int(t.Month())-1)/3+1)
	case Month:
		return t.Format("2006-01")
	case Day:
		return t.Format(time.DateOnly)
	}
	return t.Format(hourLayout)
}

const hourLayout = "2006-01-02T15"

// Parse reads a value of the unit's format back into the start of its
// period in loc; ok is false for a value of another form (a partition
// added by hand, say), which auto-partitioning leaves alone, and for a
// period loc's clock skips.
func (u TimeUnit) Parse(value string, loc *time.Location) (time.Time, bool) {
	var clock time.Time
	var err error
	switch u {
	case Year:
		clock, err = time.Parse("2006", value)
	case Quarter:
		var y, q int
		if n, e := fmt.Sscanf(value, "%4d-Q%1d", &y, &q); e != nil || n != 2 || q < 1 || q > 4 {
			return time.Time{}, false
		}
		clock = time.Date(y, time.Month(3*(q-1)+1), 1, 0, 0, 0, 0, time.UTC)
	case Month:
		clock, err = time.Parse("2006-01", value)
	case Day:
		clock, err = time.Parse(time.DateOnly, value)
	case Hour:
		clock, err = time.Parse(hourLayout, value)
	default:
		return time.Time{}, false
	}
	if err != nil || u.Format(clock) != value {
		return time.Time{}, false
	}
	t := u.startAt(clock, loc)
	if u.Format(t) != value {
		return time.Time{}, false
	}
	return t, true
}
