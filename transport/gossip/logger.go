package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// newMemberlistLogger returns a *log.Logger for memberlist whose lines go
// to logger. memberlist writes lines like "[WARN] memberlist: Refuting ...";
// the bracketed level becomes the slog level and the rest the message.
func newMemberlistLogger(logger *slog.Logger) *log.Logger {
	return log.New(&memberlistWriter{logger: logger}, "", 0)
}

type memberlistWriter struct {
	logger *slog.Logger
}

// levelPrefixes maps memberlist's level tags to slog levels. A line
// without a known tag is logged at debug level.
var levelPrefixes = []struct {
	tag   string
	level slog.Level
}{
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelError},
	{"[ERROR]", slog.LevelError},
}

// Write is called by log.Logger once per line, serialised.
func (w *memberlistWriter) Write(p []byte) (int, error) {
	level, msg := parseMemberlistLine(p)
	ctx := context.Background()
	if w.logger.Enabled(ctx, level) {
		w.logger.Log(ctx, level, msg, "component", "memberlist")
	}
	return len(p), nil
}

// parseMemberlistLine splits a memberlist log line into its level and its
// message, without the level tag, the "memberlist: " prefix and the
// trailing newline.
func parseMemberlistLine(p []byte) (slog.Level, string) {
	line := bytes.TrimSpace(p)
	level := slog.LevelDebug
	for _, lp := range levelPrefixes {
		if rest, ok := bytes.CutPrefix(line, []byte(lp.tag)); ok {
			level, line = lp.level, bytes.TrimSpace(rest)
			break
		}
	}
	line, _ = bytes.CutPrefix(line, []byte("memberlist: "))
	return level, string(line)
}
