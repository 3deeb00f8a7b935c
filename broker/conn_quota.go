package broker

// Connection creation rates (KIP-612), as Kafka's ConnectionQuotas:
//
//   - max.connection.creation.rate (broker-wide, every listener but the
//     inter-broker one) and listener.name.<l>.max.connection.creation.rate
//     (one listener): over the rate the listener stops accepting for the
//     throttle time, then serves the connection it holds.
//   - connection_creation_rate on an ip entity (ips/<ip>, else
//     ips/<default>): a connection from an IP over its rate is held
//     unserved for the throttle time and then closed.
//
// Each is a sampled rate of connections per second over quota.window.num
// windows of quota.window.size.seconds (package quota's AcceptWait and
// IPThrottle); a connection is recorded, then checked, and the throttle
// time is (rate - B) / B × window, capped at one window.

import (
	"context"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// connRateBound is listener.name.<l>.max.connection.creation.rate; false
// when it is not set.
func (b *Broker) connRateBound(listener string) (float64, bool) {
	k := "max.connection.creation.rate"
	if v, ok := b.cfg.Props["listener.name."+strings.ToLower(listener)+"."+k]; ok {
		return parseRate(v), true
	}
	return 0, false
}

func parseRate(v string) float64 {
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n <= 0 || n >= math.MaxInt32 {
		return 0
	}
	return n
}

// acceptWait records a connection accepted on l against the broker-wide
// and the listener's rates and returns how long the listener must wait
// before serving it. The inter-broker listener is spared the broker-wide
// rate when there are others (Kafka's protectedListener).
func (b *Broker) acceptWait(l *listener) time.Duration {
	var brokerBound float64
	if l.name != b.srv.interName || len(b.srv.listeners) == 1 {
		brokerBound = parseRate(b.cfg.Props["max.connection.creation.rate"])
	}
	listenerBound, _ := b.connRateBound(l.name)
	return b.quotas.AcceptWait(l.name, brokerBound, listenerBound)
}

// closeAfter closes a throttled connection after d, unserved.
func (b *Broker) closeAfter(nc net.Conn, d time.Duration) {
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.ctx.Done():
		}
		nc.Close()
	}()
}

// sleepCtx waits d; false when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
