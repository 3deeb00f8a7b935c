package quota

import (
	"net"
	"sync"
	"time"
)

// connRates is a Manager's connection creation rates (KIP-612).
type connRates struct {
	mu        sync.Mutex
	broker    *Sensor
	listeners map[string]*Sensor
	ips       map[string]*Sensor
	lastSweep time.Time
}

// AcceptWait records a connection accepted on listener against the
// broker-wide rate (bound brokerBound, max.connection.creation.rate) and
// the listener's (bound listenerBound,
// listener.name.<l>.max.connection.creation.rate) and returns how long the
// listener must wait before serving it. A bound of 0 or less is none.
func (m *Manager) AcceptWait(listener string, brokerBound, listenerBound float64) time.Duration {
	cr := &m.conns
	now := m.Now().UnixMilli()
	var wait int64
	record := func(sensor *Sensor, bound float64) {
		wait = max(wait, min(sensor.record(1, now, m.cfg.Samples, m.cfg.WindowMs, bound, true), m.cfg.WindowMs))
	}
	if brokerBound > 0 {
		cr.mu.Lock()
		if cr.broker == nil {
			cr.broker = &Sensor{}
		}
		sensor := cr.broker
		cr.mu.Unlock()
		record(sensor, brokerBound)
	}
	if listenerBound > 0 {
		cr.mu.Lock()
		if cr.listeners == nil {
			cr.listeners = map[string]*Sensor{}
		}
		sensor := cr.listeners[listener]
		if sensor == nil {
			sensor = &Sensor{}
			cr.listeners[listener] = sensor
		}
		cr.mu.Unlock()
		record(sensor, listenerBound)
	}
	return time.Duration(wait) * time.Millisecond
}

// IPThrottle records a connection from addr against its IP's
// connection_creation_rate (ips/<ip>, else ips/<default>) and returns its
// throttle time, capped at one window; 0 when it may be served.
func (m *Manager) IPThrottle(addr net.Addr) time.Duration {
	ips := m.ips.Load()
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
	now := m.Now()
	cr := &m.conns
	cr.mu.Lock()
	if cr.ips == nil {
		cr.ips = map[string]*Sensor{}
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
		sensor = &Sensor{}
		cr.ips[ip] = sensor
	}
	cr.mu.Unlock()
	t := min(sensor.record(1, now.UnixMilli(), m.cfg.Samples, m.cfg.WindowMs, bound, true), m.cfg.WindowMs)
	return time.Duration(t) * time.Millisecond
}
