package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// etcd's repeated warnings are logged once per warnEvery with a count of
// those held back; another message is not held back by them; the error
// logged when a closed listener ends etcd's serving is debug.
func TestZapLogger_RateLimitsWarnings(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := newZapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), zap.InfoLevel)
	l.Core().(*slogCore).rl.now = func() time.Time { return now }
	for range 50 {
		l.Warn("prober detected unhealthy status", zap.String("remote-peer-id", "abc"))
	}
	l.Warn("lost TCP streaming connection with remote peer")
	now = now.Add(warnEvery)
	l.Warn("prober detected unhealthy status")
	l.Error("setting up serving from embedded etcd failed.", zap.Error(errors.New("accept tcp 127.0.0.1:1: use of closed network connection")))
	l.Error("something else failed", zap.Error(errors.New("disk")))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{
		`level=WARN msg="prober detected unhealthy status" component=etcd remote-peer-id=abc`,
		`level=WARN msg="lost TCP streaming connection with remote peer" component=etcd`,
		`level=WARN msg="prober detected unhealthy status" component=etcd repeated_since_last=49`,
		`level=ERROR msg="something else failed" component=etcd error=disk`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to contain %s", i, lines[i], want)
		}
	}
}
