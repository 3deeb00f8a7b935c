package cluster

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore passes etcd's zap log entries at or above min to a slog.Logger,
// so that a Gregor process has one log.
type slogCore struct {
	l     *slog.Logger
	min   zapcore.Level
	attrs []slog.Attr
}

func newZapLogger(l *slog.Logger, min zapcore.Level) *zap.Logger {
	return zap.New(&slogCore{l: l.With("component", "etcd"), min: min})
}

func (c *slogCore) Enabled(lvl zapcore.Level) bool { return lvl >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{l: c.l, min: c.min, attrs: append(append([]slog.Attr(nil), c.attrs...), zapAttrs(fields)...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	lvl := slog.LevelInfo
	switch {
	case e.Level >= zapcore.ErrorLevel:
		lvl = slog.LevelError
	case e.Level == zapcore.WarnLevel:
		lvl = slog.LevelWarn
	case e.Level < zapcore.InfoLevel:
		lvl = slog.LevelDebug
	}
	attrs := append(append([]slog.Attr(nil), c.attrs...), zapAttrs(fields)...)
	c.l.LogAttrs(context.Background(), lvl, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func zapAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	return attrs
}
