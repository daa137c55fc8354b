package record

import "time"

// Ranges of DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ values: the years 0000 to
// 9999 of the proleptic Gregorian calendar, as in SQL and Flink. TIMESTAMP_LTZ
// bounds are instants in UTC.
const (
	millisPerDay  = 86_400_000
	nanosPerMilli = 1_000_000
	nanosPerSec   = 1_000_000_000

	minDateDays = -719_528  // 0000-01-01 in days since 1970-01-01
	maxDateDays = 2_932_896 // 9999-12-31 in days since 1970-01-01

	minTimestampMillis = minDateDays * millisPerDay       // 0000-01-01T00:00:00
	maxTimestampMillis = (maxDateDays+1)*millisPerDay - 1 // 9999-12-31T23:59:59.999
	minTimestampMicros = minTimestampMillis * 1000        // 0000-01-01T00:00:00
	maxTimestampMicros = maxTimestampMillis*1000 + 999    // 9999-12-31T23:59:59.999999
)

// floorDivMod returns the quotient rounded toward minus infinity and the
// matching non-negative remainder, for b > 0.
func floorDivMod(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// daysFromCivil returns the days since 1970-01-01 of a valid date.
func daysFromCivil(year, month, day int) int64 {
	return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// civilFromDays returns the date that is days after 1970-01-01.
func civilFromDays(days int64) (year, month, day int) {
	y, m, d := time.Unix(days*86400, 0).UTC().Date()
	return y, int(m), d
}

func daysInMonth(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

// atoiFixed parses s, which must be all ASCII digits, as a non-negative int.
func atoiFixed(s []byte) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}

// scanDate parses "YYYY-MM-DD" at the start of s and returns the days since
// 1970-01-01 and the rest of s.
func scanDate(s []byte) (days int64, rest []byte, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, nil, false
	}
	y, ok1 := atoiFixed(s[0:4])
	m, ok2 := atoiFixed(s[5:7])
	d, ok3 := atoiFixed(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, nil, false
	}
	return daysFromCivil(y, m, d), s[10:], true
}

// scanClock parses "HH:MM:SS" with an optional fraction of 1 to 9 digits at
// the start of s and returns the nanoseconds since midnight and the rest of s.
// Leap seconds are not accepted.
func scanClock(s []byte) (nanosOfDay int64, rest []byte, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, nil, false
	}
	h, ok1 := atoiFixed(s[0:2])
	m, ok2 := atoiFixed(s[3:5])
	sec, ok3 := atoiFixed(s[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 59 {
		return 0, nil, false
	}
	nanosOfDay = int64(h*3600+m*60+sec) * nanosPerSec
	rest = s[8:]
	if len(rest) > 0 && rest[0] == '.' {
		end := 1
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		digits := end - 1
		if digits < 1 || digits > 9 {
			return 0, nil, false
		}
		frac, _ := atoiFixed(rest[1:end])
		for range 9 - digits {
			frac *= 10
		}
		nanosOfDay += int64(frac)
		rest = rest[end:]
	}
	return nanosOfDay, rest, true
}

// scanZone parses "Z", "z" or "±HH:MM", which must be all of s, and returns
// the offset from UTC in seconds.
func scanZone(s []byte) (offsetSeconds int64, ok bool) {
	if len(s) == 1 && (s[0] == 'Z' || s[0] == 'z') {
		return 0, true
	}
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, false
	}
	h, ok1 := atoiFixed(s[1:3])
	m, ok2 := atoiFixed(s[4:6])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, false
	}
	offsetSeconds = int64(h*3600 + m*60)
	if s[0] == '-' {
		offsetSeconds = -offsetSeconds
	}
	return offsetSeconds, true
}

// parseDate parses "YYYY-MM-DD" into days since 1970-01-01.
func parseDate(s []byte) (days int64, ok bool) {
	days, rest, ok := scanDate(s)
	return days, ok && len(rest) == 0
}

// parseTimeOfDay parses "HH:MM:SS[.fffffffff]" into nanoseconds since
// midnight.
func parseTimeOfDay(s []byte) (nanosOfDay int64, ok bool) {
	nanosOfDay, rest, ok := scanClock(s)
	return nanosOfDay, ok && len(rest) == 0
}

// parseTimestamp parses "YYYY-MM-DD[T ]HH:MM:SS[.fffffffff]" followed, when
// withZone is set, by a mandatory RFC 3339 zone ("Z" or "±HH:MM"). It returns
// the epoch milliseconds and nanoseconds of the millisecond, as UTC for a
// zoned timestamp and as if UTC for one without zone. The result may lie
// outside the TIMESTAMP range; the caller checks it.
func parseTimestamp(s []byte, withZone bool) (millis int64, nanosOfMilli int32, ok bool) {
	days, rest, ok := scanDate(s)
	if !ok || len(rest) == 0 || (rest[0] != 'T' && rest[0] != 't' && rest[0] != ' ') {
		return 0, 0, false
	}
	nanosOfDay, rest, ok := scanClock(rest[1:])
	if !ok {
		return 0, 0, false
	}
	var offsetSeconds int64
	if withZone {
		if offsetSeconds, ok = scanZone(rest); !ok {
			return 0, 0, false
		}
	} else if len(rest) != 0 {
		return 0, 0, false
	}
	millis = days*millisPerDay + nanosOfDay/nanosPerMilli - offsetSeconds*1000
	return millis, int32(nanosOfDay % nanosPerMilli), true
}

// appendPadded appends the non-negative v in decimal, zero-padded to width.
func appendPadded(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v >= 10 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	buf[i] = byte('0' + v)
	for n := len(buf) - i; n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, buf[i:]...)
}

// appendDate appends days since 1970-01-01 as "YYYY-MM-DD".
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	dst = appendPadded(dst, int64(y), 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(m), 2)
	dst = append(dst, '-')
	return appendPadded(dst, int64(d), 2)
}

// appendClock appends "HH:MM:SS" of a time of day given in milliseconds.
func appendClock(dst []byte, millisOfDay int64) []byte {
	sec := millisOfDay / 1000
	dst = appendPadded(dst, sec/3600, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec/60%60, 2)
	dst = append(dst, ':')
	return appendPadded(dst, sec%60, 2)
}

// appendFraction appends "." and the first digits of the 9-digit fraction
// nanosOfSecond, or nothing when digits is 0.
func appendFraction(dst []byte, nanosOfSecond int64, digits int) []byte {
	if digits <= 0 {
		return dst
	}
	for range 9 - digits {
		nanosOfSecond /= 10
	}
	dst = append(dst, '.')
	return appendPadded(dst, nanosOfSecond, digits)
}

// appendTimeOfDay appends a TIME value as "HH:MM:SS", followed by ".fff" when
// the milliseconds are not zero.
func appendTimeOfDay(dst []byte, millisOfDay int64) []byte {
	dst = appendClock(dst, millisOfDay)
	if ms := millisOfDay % 1000; ms != 0 {
		dst = appendFraction(dst, ms*nanosPerMilli, 3)
	}
	return dst
}

// appendTimestampText appends "YYYY-MM-DDTHH:MM:SS" and a fraction of exactly
// precision digits, followed by "Z" when utc is set.
func appendTimestampText(dst []byte, millis int64, nanosOfMilli int32, precision int, utc bool) []byte {
	days, millisOfDay := floorDivMod(millis, millisPerDay)
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	dst = appendClock(dst, millisOfDay)
	dst = appendFraction(dst, millisOfDay%1000*nanosPerMilli+int64(nanosOfMilli), precision)
	if utc {
		dst = append(dst, 'Z')
	}
	return dst
}
