package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore passes etcd's zap log entries at or above min to a slog.Logger,
// so that a Gregor process has one log. Warnings are rate-limited by
// message: while a peer is down etcd repeats the same few (the prober's
// unhealthy status, a lost stream) several times a second, which would
// bury the broker's own lines.
type slogCore struct {
	l     *slog.Logger
	min   zapcore.Level
	attrs []slog.Attr
	rl    *warnLimiter
}

func newZapLogger(l *slog.Logger, min zapcore.Level) *zap.Logger {
	return zap.New(&slogCore{l: l.With("component", "etcd"), min: min, rl: &warnLimiter{seen: map[string]*warnSeen{}, now: time.Now}})
}

// warnEvery is how often one warning message is logged at most.
const warnEvery = 30 * time.Second

// warnLimiter lets a warning message through once per warnEvery, and
// says how many were held back when it next lets it through.
type warnLimiter struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]*warnSeen
}

type warnSeen struct {
	last       time.Time
	suppressed int
}

// allow reports whether msg is logged now, and how many of it were held
// back since it last was.
func (w *warnLimiter) allow(msg string) (bool, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	s := w.seen[msg]
	if s == nil {
		if len(w.seen) > 1000 { // etcd's messages are constants; bound it anyway
			clear(w.seen)
		}
		w.seen[msg] = &warnSeen{last: now}
		return true, 0
	}
	if now.Sub(s.last) < warnEvery {
		s.suppressed++
		return false, 0
	}
	n := s.suppressed
	s.last, s.suppressed = now, 0
	return true, n
}

func (c *slogCore) Enabled(lvl zapcore.Level) bool { return lvl >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{l: c.l, min: c.min, attrs: append(append([]slog.Attr(nil), c.attrs...), zapAttrs(fields)...), rl: c.rl}
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
	if lvl == slog.LevelError && closedListener(attrs) {
		// etcd's serving goroutines end so when it stops: not an error.
		lvl = slog.LevelDebug
	}
	if lvl == slog.LevelWarn && c.rl != nil {
		ok, held := c.rl.allow(e.Message)
		if !ok {
			return nil
		}
		if held > 0 {
			attrs = append(attrs, slog.Int("repeated_since_last", held))
		}
	}
	c.l.LogAttrs(context.Background(), lvl, e.Message, attrs...)
	return nil
}

// closedListener reports an entry about a listener closed under it.
func closedListener(attrs []slog.Attr) bool {
	for _, a := range attrs {
		if a.Key == "error" && strings.Contains(a.Value.String(), "use of closed network connection") {
			return true
		}
	}
	return false
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
