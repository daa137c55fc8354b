package raftmeta

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter sends hashicorp/raft's logging to a *slog.Logger.
type hclogAdapter struct {
	logger *slog.Logger
	name   string
	args   []any
}

func newHCLog(logger *slog.Logger, name string) hclog.Logger {
	return &hclogAdapter{logger: logger, name: name}
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func toSlogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	lvl := toSlogLevel(level)
	if lvl == slog.LevelWarn && msg == "heartbeat timeout reached, starting election" && firstElection(args) {
		lvl = slog.LevelInfo // a new group's first election is routine, not a warning
	}
	if !h.logger.Enabled(context.Background(), lvl) {
		return
	}
	all := make([]any, 0, len(h.args)+len(args)+2)
	if h.name != "" {
		all = append(all, "component", h.name)
	}
	all = append(all, h.args...)
	all = append(all, slogArgs(args)...)
	h.logger.Log(context.Background(), lvl, msg, all...)
}

// firstElection reports whether raft's election arguments say no leader was
// ever known.
func firstElection(args []any) bool {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "last-leader-id" || k == "last_leader_id" {
			return args[i+1] == "" || fmt.Sprint(args[i+1]) == ""
		}
	}
	return false
}

// slogArgs rewrites hclog's dashed keys (e.g. "leader-address") to the
// snake_case keys the rest of Floe logs, and renders hclog's formatting
// values, which slog would print as Go values: raft logs a configuration as
// hclog.Fmt("%+v", servers), which came out as servers="[%+v [...]]".
func slogArgs(args []any) []any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && strings.Contains(k, "-") {
			args[i] = strings.ReplaceAll(k, "-", "_")
		}
		args[i+1] = hclogValue(args[i+1])
	}
	return args
}

// hclogValue is v as hclog's own text logger renders it.
func hclogValue(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) == 0 {
			return ""
		}
		format, ok := v[0].(string)
		if !ok {
			return fmt.Sprint(v...)
		}
		return fmt.Sprintf(format, v[1:]...)
	case hclog.Hex:
		return "0x" + strconv.FormatUint(uint64(v), 16)
	case hclog.Octal:
		return "0" + strconv.FormatUint(uint64(v), 8)
	case hclog.Binary:
		return "0b" + strconv.FormatUint(uint64(v), 2)
	case hclog.Quote:
		return strconv.Quote(string(v))
	}
	return v
}

func (h *hclogAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogAdapter) IsTrace() bool { return false }
func (h *hclogAdapter) IsDebug() bool { return h.logger.Enabled(context.Background(), slog.LevelDebug) }
func (h *hclogAdapter) IsInfo() bool  { return h.logger.Enabled(context.Background(), slog.LevelInfo) }
func (h *hclogAdapter) IsWarn() bool  { return h.logger.Enabled(context.Background(), slog.LevelWarn) }
func (h *hclogAdapter) IsError() bool { return h.logger.Enabled(context.Background(), slog.LevelError) }

func (h *hclogAdapter) ImpliedArgs() []any { return h.args }

func (h *hclogAdapter) With(args ...any) hclog.Logger {
	return &hclogAdapter{logger: h.logger, name: h.name, args: append(append([]any(nil), h.args...), slogArgs(args)...)}
}

func (h *hclogAdapter) Name() string { return h.name }

func (h *hclogAdapter) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return &hclogAdapter{logger: h.logger, name: name, args: h.args}
}

func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{logger: h.logger, name: name, args: h.args}
}

// SetLevel is ignored: the slog handler decides what is logged.
func (h *hclogAdapter) SetLevel(hclog.Level) {}

func (h *hclogAdapter) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.logger.Handler(), slog.LevelInfo)
}

func (h *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return slog.NewLogLogger(h.logger.Handler(), slog.LevelInfo).Writer()
}
