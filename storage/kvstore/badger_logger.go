package kvstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// badgerLogger adapts a *slog.Logger to badger.Logger. Badger formats its
// messages printf-style, often with a trailing newline, which is trimmed.
type badgerLogger struct {
	log *slog.Logger
}

func (l badgerLogger) logf(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.log.Log(ctx, level, strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "component", "badger")
}

func (l badgerLogger) Errorf(format string, args ...any)   { l.logf(slog.LevelError, format, args) }
func (l badgerLogger) Warningf(format string, args ...any) { l.logf(slog.LevelWarn, format, args) }
func (l badgerLogger) Infof(format string, args ...any)    { l.logf(slog.LevelInfo, format, args) }
func (l badgerLogger) Debugf(format string, args ...any)   { l.logf(slog.LevelDebug, format, args) }
