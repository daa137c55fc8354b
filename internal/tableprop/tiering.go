package tableprop

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseTiering reads one of the tiering properties into v.
func parseTiering(v *Values, k, val string) error {
	bad := func(problem string) error { return &Error{Property: k, Value: val, Problem: problem} }
	switch k {
	case LogSegmentBytes:
		n, ok := parseBytes(val)
		if !ok || n < minLogSegmentBytes || n > maxLogSegmentBytes {
			return bad("want a size from 64KiB to 1GiB (bytes, or a number with KiB, MiB or GiB)")
		}
		v.LogSegmentBytes = n
	case LogTTL:
		d, ok := parseDurationOrForever(val)
		if !ok {
			return bad("want a duration of at least 1s (30s, 12h, 7d) or forever")
		}
		v.LogTTL = d
	case LogLocalTTL:
		d, ok := parseDuration(val)
		if !ok {
			return bad("want a duration of at least 1s (30s, 12h, 7d)")
		}
		v.LogLocalTTL = d
	case KVSnapshotInterval:
		d, ok := parseDuration(val)
		if !ok {
			return bad("want a duration of at least 1s (30s, 10m, 1h)")
		}
		v.KVSnapshotInterval = d
	case LogLocalSegments:
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > maxLocalSegments {
			return bad(fmt.Sprintf("want an integer from 1 to %d", maxLocalSegments))
		}
		v.LogLocalSegments = n
	case KVSnapshotRetained:
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > maxRetained {
			return bad(fmt.Sprintf("want an integer from 1 to %d", maxRetained))
		}
		v.KVSnapshotRetained = n
	default:
		return bad("no parser for this property (a bug in the registry)")
	}
	return nil
}

// parseDurationOrForever reads a duration as parseDuration does, or
// forever (any case) as 0.
func parseDurationOrForever(s string) (time.Duration, bool) {
	if strings.EqualFold(s, Forever) {
		return 0, true
	}
	return parseDuration(s)
}

// parseDuration reads a Go duration ("90s", "1h30m") or a whole number of
// days ("7d"), at least minDuration.
func parseDuration(s string) (time.Duration, bool) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, false
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, false
		}
	}
	return d, d >= minDuration
}

// parseBytes reads a byte count: a plain number or one with a KiB, MiB or
// GiB suffix (case-insensitive).
func parseBytes(s string) (int64, bool) {
	mult := int64(1)
	lower := strings.ToLower(s)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}} {
		if num, ok := strings.CutSuffix(lower, u.suffix); ok {
			lower, mult = num, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, false
	}
	return n * mult, true
}
