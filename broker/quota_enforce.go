package broker

// Quota enforcement on the connection, with Kafka's semantics
// (ClientQuotaManager and ClientRequestQuotaManager); which quota applies,
// the rates and the throttle times are package quota's.
//
// Produce records the request's size, Fetch (consumers, not followers) its
// response size; a Fetch is also capped at what its quota allows in the
// window (quota.Manager.MaxFetchBytes), and a throttled Fetch is answered
// empty (its bytes unrecorded), as Kafka does. Every other request records
// its handler time against the request quota.
//
// # Throttling (KIP-219)
//
// The broker answers at once with throttle_time_ms set and then mutes the
// connection: it reads (or handles) nothing more from it until the throttle
// time has passed. With no quota configured the only cost on a request is
// one atomic load (Broker.quotas.Index is nil).

import (
	"math"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotasFor returns the request's quotas under ix, cached on its
// connection while ix, the user and the client-id stay the same.
func (b *Broker) quotasFor(r *request, ix *quota.Index) *quota.Set {
	user := r.principal()
	if i := strings.IndexByte(user, ':'); i >= 0 {
		user = user[i+1:]
	}
	client := ""
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	var c *conn
	if r.conn != nil {
		c = r.conn
		if cq := c.quotas.Load(); cq != nil && cq.Of(ix, user, client) {
			return cq
		}
	}
	cq := b.quotas.For(ix, user, client)
	if c != nil {
		c.quotas.Store(cq)
	}
	return cq
}

// quotaExempt tells whether a request is outside the request quota, as
// Kafka exempts ApiVersions, the SASL exchange and replication.
func quotaExempt(r *request) bool {
	switch kmsg.Key(r.hdr.Key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	case kmsg.Fetch:
		return fetchReplicaID(r.msg.(*kmsg.FetchRequest)) >= 0
	}
	return false
}

// throttleAfterHandler records a handled request against the quotas of its
// client (produce bytes and request time; Fetch records its own) and sets
// its throttle time.
func (b *Broker) throttleAfterHandler(r *request, ix *quota.Index, handlerTime time.Duration) {
	if quotaExempt(r) {
		return
	}
	cq := b.quotasFor(r, ix)
	now := time.Now()
	var bw, req int64
	produce, isProduce := r.msg.(*kmsg.ProduceRequest)
	if isProduce {
		bw = b.quotas.Record(cq, quota.Produce, float64(r.size), now)
	}
	if !isProduce || produce.Acks != 0 {
		req = b.quotas.Record(cq, quota.Request, quota.RequestPercent(handlerTime), now)
	}
	// The larger throttle wins, with one a handler set (the controller
	// mutation quota), as Kafka's sendResponseMaybeThrottleWithControllerQuota.
	switch {
	case bw > 0 && bw > req && bw > r.throttleMs:
		r.throttleMs, r.throttleKind = bw, quota.Produce
	case req > 0 && req >= r.throttleMs:
		r.throttleMs, r.throttleKind = req, quota.Request
	}
}

// applyThrottle sets a response's throttle time, mutes the connection for
// it and counts it. It is called by conn.finish.
func (c *conn) applyThrottle(r *request, resp kmsg.Response) {
	if r.throttleMs <= 0 {
		return
	}
	if resp != nil {
		if st, ok := resp.(kmsg.SetThrottleResponse); ok {
			st.SetThrottle(int32(min(r.throttleMs, math.MaxInt32)))
		}
	}
	c.mutedUntil.Store(time.Now().Add(time.Duration(r.throttleMs) * time.Millisecond).UnixNano())
	c.b.metrics().throttle[r.throttleKind].Observe(float64(r.throttleMs))
}

// waitMuted waits while the connection is muted by a throttle; false when
// the connection is closing.
func (c *conn) waitMuted() bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}
