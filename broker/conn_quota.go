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
// windows of quota.window.size.seconds (as the client quotas, quota_enforce.go);
// a connection is recorded, then checked, and the throttle time is
// (rate - B) / B × window, capped at one window.

import (
	"context"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// connRates is the broker's connection creation rates.
type connRates struct {
	mu        sync.Mutex
	broker    *rateSensor
	listeners map[string]*rateSensor
	ips       map[string]*rateSensor
	lastSweep time.Time
}

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
// before serving it.
func (b *Broker) acceptWait(l *listener) time.Duration {
	s := &b.quotas
	cr := &b.connRates
	now := s.now().UnixMilli()
	var wait int64
	record := func(r **rateSensor, bound float64) {
		if bound <= 0 {
			return
		}
		cr.mu.Lock()
		if *r == nil {
			*r = &rateSensor{}
		}
		sensor := *r
		cr.mu.Unlock()
		wait = max(wait, min(sensor.record(1, now, s.samples, s.windowMs, bound, true), s.windowMs))
	}
	// The inter-broker listener is spared when there are others (Kafka's
	// protectedListener).
	if l.name != b.srv.interName || len(b.srv.listeners) == 1 {
		record(&cr.broker, parseRate(b.cfg.Props["max.connection.creation.rate"]))
	}
	if bound, ok := b.connRateBound(l.name); ok {
		cr.mu.Lock()
		if cr.listeners == nil {
			cr.listeners = map[string]*rateSensor{}
		}
		sensor := cr.listeners[l.name]
		if sensor == nil {
			sensor = &rateSensor{}
			cr.listeners[l.name] = sensor
		}
		cr.mu.Unlock()
		record(&sensor, bound)
	}
	return time.Duration(wait) * time.Millisecond
}

// ipThrottle records a connection from addr against its IP's
// connection_creation_rate and returns its throttle time; 0 when it may be
// served.
func (b *Broker) ipThrottle(addr net.Addr) time.Duration {
	s := &b.quotas
	ips := s.ips.Load()
	if ips == nil {
		return 0
	}
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return 0
	}
	ip := ta.IP.String()
	bound, ok := (*ips)[ip]
	if !ok {
		if bound, ok = (*ips)[""]; !ok {
			return 0
		}
	}
	now := s.now()
	cr := &b.connRates
	cr.mu.Lock()
	if cr.ips == nil {
		cr.ips = map[string]*rateSensor{}
	}
	if now.Sub(cr.lastSweep) > time.Minute {
		cr.lastSweep = now
		for k, r := range cr.ips {
			if r.idleSince(now.UnixMilli()) > time.Hour.Milliseconds() {
				delete(cr.ips, k)
			}
		}
	}
	sensor := cr.ips[ip]
	if sensor == nil {
		sensor = &rateSensor{}
		cr.ips[ip] = sensor
	}
	cr.mu.Unlock()
	t := min(sensor.record(1, now.UnixMilli(), s.samples, s.windowMs, bound, true), s.windowMs)
	return time.Duration(t) * time.Millisecond
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

// buildIPRates indexes the ip entities' connection_creation_rate by IP
// ("" for the default entity); nil when there is none.
func buildIPRates(recs map[string]quotaRecord) *map[string]float64 {
	var out map[string]float64
	for _, q := range recs {
		v, ok := q.Values[keyConnectionCreationRate]
		n, isIP := q.Entity[quotaIP]
		if !ok || !isIP {
			continue
		}
		ip := ""
		if n != nil {
			ip = *n
			if p := net.ParseIP(ip); p != nil {
				ip = p.String()
			}
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[ip] = v
	}
	if out == nil {
		return nil
	}
	return &out
}
