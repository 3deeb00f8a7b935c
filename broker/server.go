package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxInFlight bounds the requests one connection may have read but not yet
// answered; the reader stops reading until the oldest is written.
const maxInFlight = 64

// framePooled names the requests whose frame goes back to the pool once
// they are answered (deliver): nothing refers to a produce request's bytes
// after its answer is written (the batches are copied into the log by
// write(2)), and the others have no byte fields (kmsg copies their
// strings; request_reuse.go replaces the aliased ones at once). Until then the
// request is read: by the handler, by an acks=all produce's wait, by the
// metrics and quotas in finish. The rest may keep slices of their frame
// (group metadata, say) and are left to the collector.
var framePooled = map[int16]bool{
	int16(kmsg.Produce):     true,
	int16(kmsg.Fetch):       true,
	int16(kmsg.ListOffsets): true,
	int16(kmsg.Metadata):    true,
	int16(kmsg.Heartbeat):   true,
	int16(kmsg.OffsetFetch): true,
	int16(kmsg.ApiVersions): true,
}

// readBufferSize is each connection's read buffer: a small request and the
// size of the next arrive in one read(2); larger bodies bypass it. A
// parked connection drops its buffer and gets a new one when it wakes.
const readBufferSize = 4 << 10

// parkAfter is how long a connection sends nothing before it is parked
// (park_linux.go).
const parkAfter = time.Second

// server owns the listeners and the live connections.
type server struct {
	mu        sync.Mutex
	listeners []*listener // listeners.go
	interName string      // inter.broker.listener.name
	interOpts []kgo.Opt   // TLS and SASL of inter-broker clients (interbroker.go)
	// peerName and peerListen are the controller listener's name and
	// host:port, where the etcd member binds its peer port; empty without
	// one (listeners.go). Set before the listeners are bound.
	peerName, peerListen string
	conns                map[*conn]struct{}
	wg                   sync.WaitGroup
	closed               bool
	active               atomic.Int64
	// parker holds the connections idle for parkAfter without a
	// goroutine (park_linux.go); nil where there is none. Set by Serve.
	parker *parker
	// advHost and advPort are the inter-broker listener's advertised
	// address, the one the cluster metadata holds.
	advHost string
	advPort int32
}

// conn is one client connection. Its reader decodes requests and runs them
// one at a time in arrival order, as Kafka does (an idempotent producer's
// pipelined batches must be appended in the order sent); its writer sends
// responses strictly in request order. Handlers that may wait (a
// long-polling Fetch, JoinGroup and SyncGroup during a rebalance) run in
// goroutines of their own, so they delay only the responses queued behind
// them, never the reading or handling of further requests.
type conn struct {
	b *Broker
	// softwareName and softwareVersion are what the client's ApiVersions
	// (v3+) said; set and read on the reader (KIP-714 matching).
	softwareName, softwareVersion string
	nc                            net.Conn
	ctx                           context.Context
	cancel                        context.CancelFunc
	// queue holds the responses the writer sends, in request order. The
	// reader makes it, and starts the writer, the first time it has a
	// response it cannot send itself: a connection that only ever gets
	// answers the reader writes (an idle one, a batch-1 client) has one
	// goroutine, not two.
	queue chan *pending

	ls        *listener
	auth      *connAuth              // nil unless the listener uses SASL (sasl.go)
	principal atomic.Pointer[string] // set by TLS client certificates and SASL
	bw        *bufio.Writer          // TLS: responses are copied through it
	br        *bufio.Reader          // requests: a small one costs one read(2)

	// queued counts responses handed to the writer and not yet written.
	// Only the reader adds to it, so when it reads zero the writer is idle
	// and the reader may answer a request it handled itself directly, in
	// order, without waking the writer (the batch-1 round trip).
	queued atomic.Int32

	// quotas caches the connection's resolved client quotas; mutedUntil
	// (unix ns) is the end of its current throttle (quota_enforce.go).
	quotas     atomic.Pointer[quota.Set]
	mutedUntil atomic.Int64

	// Reader-owned: what the next request may reuse (request_reuse.go).
	spare    *pending // the last Produce or Fetch the reader answered itself
	clientID *string  // the last request's client id

	// Parking an idle connection (park): writerDone is closed by a writer
	// that ended because the reader closed its queue with parking set;
	// noPark once parking failed. Reader-owned but parking.
	writerDone chan struct{}
	parking    atomic.Bool
	noPark     bool
}

// pending is a request's place in its connection's response order.
type pending struct {
	// done is closed when the answer is ready; nil when the request was
	// handled in the reader, so that the answer was ready on return.
	done chan struct{}
	// later, when set, completes the answer: a wait the handler left
	// (a Fetch's long poll) that runs in whichever goroutine awaits the
	// pending, the writer when its turn comes, instead of in a goroutine
	// of its own that would then wake the writer: one hand-off fewer
	// between an append and the answer to a waiting consumer.
	later   func()
	out     *protocol.Out // nil: no response (acks=0 produce)
	release func()        // called after out is written or dropped
	fatal   error         // non-nil: close the connection instead of answering
	bytes   int64         // request bytes held in the broker's budget until answered
	// frame is the pooled request frame (framePooled keys), given back
	// in deliver, once the answer is written or dropped: the decoded
	// request aliases it (a Produce's records, strings of the others),
	// and its handler's wait, the metrics and the quotas read it until
	// the answer is encoded.
	frame []byte
	// closeAfter closes the connection once out is written (a failed SASL
	// exchange is answered, then closed).
	closeAfter bool
	// recycle: a Produce or Fetch whose pending may become the
	// connection's spare once the reader has answered it itself.
	recycle bool

	req  request  // the request, in the same allocation
	keep reusable // objects kept for the connection's next request (request_reuse.go)
}

// request is what a handler sees.
type request struct {
	conn *conn
	hdr  protocol.RequestHeader
	msg  kmsg.Request
	ctx  context.Context

	// Set by handlers that answer with more than a kmsg.Response.
	out        *protocol.Out
	release    func()
	noResponse bool
	// waitInWriter lets wait run in the connection's writer when the
	// answer's turn comes (Fetch): right for a wait that only watches
	// for data until an absolute deadline, so that starting it after
	// the answers queued before it loses nothing.
	waitInWriter bool
	closeAfter   bool // answer, then close the connection
	// wait, when set by a handler, runs in a goroutine of its own after
	// the handler returns and before the response is encoded: the part of
	// a request that must happen in order (an append) is done by the
	// handler on the reader, the part that may take long (waiting for the
	// followers of an acks=all produce, a Fetch's long poll) does not hold
	// up the connection.
	wait func()

	// keep is what the handler may reuse for its response (request_reuse.go);
	// nil for a request run by Execute.
	keep *reusable

	// caller is the identity of a request run by Execute (conn is nil).
	caller *Caller
	size   int // bytes of the request frame

	// Client quotas (quota_enforce.go): the throttle time of the answer
	// and the quota that set it; quotaDone when the handler has recorded
	// the request itself (Fetch).
	throttleMs   int64
	throttleKind quota.Kind
	quotaDone    bool
}

// Listen binds the configured listeners (listeners, else Config.Listen as
// one PLAINTEXT listener) and returns the first one's address. It is
// separate from Serve so a caller can learn the bound address (for --listen
// 127.0.0.1:0) before serving; ListenerAddr gives the others'.
func (b *Broker) Listen() (net.Addr, error) {
	ls, inter, ctrl, err := b.buildListeners()
	if err != nil {
		return nil, err
	}
	if ctrl != nil {
		b.srv.mu.Lock()
		b.srv.peerName, b.srv.peerListen = ctrl.name, net.JoinHostPort(ctrl.host, ctrl.port)
		b.srv.mu.Unlock()
	}
	if err := b.bindListeners(ls); err != nil {
		return nil, err
	}
	closeAll := func() {
		for _, l := range ls {
			l.ln.Close()
		}
		if b.registry != nil {
			b.registry.ln.Close()
		}
	}
	if b.registry, err = b.listenSchemaRegistry(); err != nil {
		closeAll()
		return nil, err
	}
	b.srv.mu.Lock()
	b.srv.listeners, b.srv.interName = ls, inter
	b.srv.mu.Unlock()
	for _, l := range ls {
		if l.name == inter {
			b.srv.advHost, b.srv.advPort = l.advHost, l.advPort
		}
	}
	if b.cfg.clusterConfigured() {
		// Only brokers of a cluster have peers to reach.
		if b.srv.interOpts, err = b.interBrokerOpts(); err != nil {
			closeAll()
			return nil, err
		}
		if err := b.startCluster(b.srv.advHost, b.srv.advPort); err != nil {
			closeAll()
			return nil, err
		}
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		err := b.seedClusterUsers(ctx, b.cluster.node.Collection("users"))
		cancel()
		if err != nil {
			b.log.Warn("copying local users into the cluster failed", "err", err)
		}
	}
	b.startLinks()
	return ls[0].ln.Addr(), nil
}

// Serve accepts connections on every listener until Close. Listen must
// have been called.
func (b *Broker) Serve() error {
	s := &b.srv
	s.mu.Lock()
	ls := s.listeners
	s.mu.Unlock()
	if len(ls) == 0 {
		return errors.New("broker: Serve before Listen")
	}
	s.mu.Lock()
	if s.parker == nil && !s.closed {
		s.parker = newParker(time.Duration(b.cfg.int64Prop("connections.max.idle.ms")) * time.Millisecond)
	}
	s.mu.Unlock()
	if b.registry != nil {
		go b.registry.serve()
	}
	errc := make(chan error, len(ls))
	for _, l := range ls {
		go func() { errc <- b.accept(l) }()
	}
	var first error
	for range ls {
		if err := <-errc; err != nil && first == nil {
			first = err
			s.close() // one listener failing stops the broker serving
		}
	}
	return first
}

// accept serves one listener.
func (b *Broker) accept(l *listener) error {
	s := &b.srv
	maxConns := b.cfg.int64Prop("max.connections")
	var tlsCfg *tls.Config
	if l.tls != nil {
		tlsCfg = l.tls.ServerConfig()
	}
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if b.ctx.Err() != nil {
				return nil
			}
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if d := b.acceptWait(l); d > 0 && !sleepCtx(b.ctx, d) {
			nc.Close()
			return nil
		}
		if d := b.quotas.IPThrottle(nc.RemoteAddr()); d > 0 {
			b.closeAfter(nc, d)
			continue
		}
		if s.active.Load() >= maxConns {
			b.log.Warn("max.connections reached, closing new connection", "remote", nc.RemoteAddr())
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		c := &conn{b: b, nc: nc, ls: l}
		if tlsCfg != nil {
			c.nc = tls.Server(nc, tlsCfg)
			c.bw = bufio.NewWriterSize(c.nc, 64<<10)
		}
		if l.sasl != nil {
			c.auth = &connAuth{deadline: time.Now().Add(l.sasl.authTimeout)}
		}
		c.ctx, c.cancel = context.WithCancel(b.ctx)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		if s.conns == nil {
			s.conns = map[*conn]struct{}{}
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.active.Add(1)
		s.mu.Unlock()
		go c.readLoop()
	}
}

// logger is the connection's logger: the broker's, with the remote address
// and, when there are several listeners, the listener's name. It is made
// when a line is logged, not kept per connection.
func (c *conn) logger() *slog.Logger {
	l := c.b.log.With("remote", c.nc.RemoteAddr().String())
	if c.ls != nil && len(c.b.srv.listeners) > 1 {
		l = l.With("listener", c.ls.name)
	}
	return l
}

// close stops accepting, closes every connection and waits for them.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	for _, l := range s.listeners {
		if l.ln != nil {
			l.ln.Close()
		}
	}
	for c := range s.conns {
		c.nc.Close()
	}
	pk := s.parker
	s.mu.Unlock()
	if pk != nil {
		pk.close() // ends the parked connections, which no reader will
	}
	s.wg.Wait()
}

func (c *conn) readLoop() {
	parked := false
	defer func() {
		switch {
		case parked:
		case c.queue != nil:
			close(c.queue) // the writer drains it and ends the connection
		default:
			c.end()
		}
	}()
	idle := time.Duration(c.b.cfg.int64Prop("connections.max.idle.ms")) * time.Millisecond
	if !c.handshakeTLS() {
		c.cancel()
		return
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(c.nc, readBufferSize)
	}
	pk := c.b.srv.parker
	var idleSet time.Time  // when the read deadline was last pushed back
	var wait time.Duration // what it was pushed back by
	for {
		if !c.waitMuted() { // a throttled connection is not read (KIP-219)
			c.cancel()
			return
		}
		// A connection that sends nothing for parkAfter is parked; the
		// parker closes it once idle for connections.max.idle.ms.
		want := idle
		if pk != nil && c.parkable() && (idle <= 0 || parkAfter < idle) {
			want = parkAfter
		}
		switch {
		case !c.auth.authenticated():
			c.nc.SetReadDeadline(c.auth.deadline) // authenticate in time
		case want > 0:
			// Moving a deadline costs a timer update; push it back only
			// when 1% of the wait has passed since the last push.
			if now := time.Now(); now.Sub(idleSet) > want/100 || want != wait {
				c.nc.SetReadDeadline(now.Add(want))
				idleSet, wait = now, want
			}
		case c.auth != nil:
			c.nc.SetReadDeadline(time.Time{}) // the authentication deadline is past
		}
		n, err := protocol.ReadFrameSize(c.br, c.frameLimit())
		if err != nil {
			if wait == parkAfter && isTimeout(err) {
				// Parked when nothing is half read and no answer is in
				// flight (a long poll, a JoinGroup waiting for its
				// rebalance); else read on, the deadline set again.
				if c.br.Buffered() == 0 && c.queued.Load() == 0 {
					if parked = c.park(pk, idleSet); parked {
						return
					}
				}
				wait = 0
				continue
			}
			c.logReadError(err)
			c.cancel()
			return
		}
		// Wait for room in the broker-wide budget of request bytes in
		// flight before allocating the body.
		charge := protocol.FrameAllocSize(n)
		if err := c.b.reqBytes.acquire(c.ctx, charge); err != nil {
			c.cancel()
			return
		}
		frame, err := protocol.ReadFrameInto(c.br, n)
		if err != nil {
			c.b.reqBytes.release(charge)
			c.logReadError(err)
			c.cancel()
			return
		}
		if !c.waitMuted() { // a throttle set while this request was read
			c.b.reqBytes.release(charge)
			c.cancel()
			return
		}
		p, err := c.dispatch(frame)
		if err != nil {
			c.b.reqBytes.release(charge)
			c.logger().Warn("closing connection", "err", err)
			c.cancel()
			return
		}
		p.bytes = charge
		if c.queued.Load() == 0 && p.handled() {
			if !c.deliver(p, false) || p.closeAfter {
				return
			}
			c.recycle(p)
			continue
		}
		c.queued.Add(1)
		if c.queue == nil {
			c.queue = make(chan *pending, maxInFlight)
			c.writerDone = make(chan struct{})
			c.b.srv.wg.Add(1)
			go c.writeLoop(c.writerDone)
		}
		select {
		case c.queue <- p:
		case <-c.ctx.Done():
			go func() { p.await(); c.deliver(p, true) }() // releases what it holds, writes nothing
			return
		}
		if p.closeAfter {
			return // the writer closes the connection after the answer
		}
	}
}

// write sends one response: with writev and sendfile on a plain TCP
// connection, copied through a buffer into the TLS connection otherwise
// (sendfile cannot go through TLS).
func (c *conn) write(out *protocol.Out) error {
	if c.bw == nil {
		_, err := out.WriteTo(c.nc)
		return err
	}
	if _, err := out.WriteToWriter(c.bw); err != nil {
		return err
	}
	return c.bw.Flush()
}

// handshakeTLS completes a TLS connection's handshake and takes the
// principal of the client's certificate; false closes the connection.
func (c *conn) handshakeTLS() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	timeout := 10 * time.Second
	if c.ls.sasl != nil {
		timeout = c.ls.sasl.authTimeout
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.b.sec.noteTLSHandshake(false)
		if c.ctx.Err() == nil {
			c.logger().Info("TLS handshake failed", "err", err)
		}
		return false
	}
	c.b.sec.noteTLSHandshake(true)
	if c.auth == nil {
		p := c.ls.tls.Principal(tc.ConnectionState())
		c.principal.Store(&p)
	}
	return true
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
	case errors.Is(err, protocol.ErrFrameTooLarge), errors.Is(err, protocol.ErrNegativeFrame):
		c.logger().Warn("closing connection: bad request size", "err", err)
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.logger().Info("closing idle connection")
			return
		}
		c.logger().Info("connection read failed", "err", err)
	}
}

// errUnsupportedApiVersions is returned by decodeRequest for an ApiVersions
// request of a version Gregor does not know: it is answered, not fatal.
var errUnsupportedApiVersions = errors.New("unsupported ApiVersions version")

// decodeRequest checks a frame's key and version against the registry and
// decodes it. Nothing of the request body is touched before the key and
// version are known to be handled. errUnsupportedApiVersions asks for the v0
// UNSUPPORTED_VERSION answer; any other error means the connection must be
// closed (unknown key, unsupported version, undecodable request), as Kafka
// does.
func decodeRequest(frame []byte) (handler, protocol.RequestHeader, kmsg.Request, error) {
	return decodeRequestInto(frame, nil, nil)
}

// decodeRequestInto is decodeRequest decoding into kept's objects when it
// has them (and keeping new ones in it), with the client id taken from
// *clientID when it is the same (and remembered there); either may be nil.
func decodeRequestInto(frame []byte, kept *reusable, clientID **string) (handler, protocol.RequestHeader, kmsg.Request, error) {
	var hdr protocol.RequestHeader
	key, version, corr, err := protocol.ParseRequestHeaderPrefix(frame)
	if err != nil {
		return handler{}, hdr, nil, err
	}
	hdr.Key, hdr.Version, hdr.CorrelationID = key, version, corr
	h, ok := handlers[key]
	if !ok {
		return h, hdr, nil, fmt.Errorf("unknown api key %d (version %d)", key, version)
	}
	if version < h.acceptMin || version > h.max {
		if key == int16(kmsg.ApiVersions) {
			return h, hdr, nil, errUnsupportedApiVersions
		}
		return h, hdr, nil, fmt.Errorf("unsupported version %d of %s (supported %d-%d)", version, kmsg.NameForKey(key), h.acceptMin, h.max)
	}
	msg := kept.request(key)
	if msg == nil {
		return h, hdr, nil, fmt.Errorf("unknown api key %d", key)
	}
	msg.SetVersion(version)
	var last *string
	if clientID != nil {
		last = *clientID
	}
	hdr, body, err := protocol.ParseRequestHeaderReuse(frame, msg.IsFlexible(), last)
	if clientID != nil {
		*clientID = hdr.ClientID
	}
	if err != nil {
		return h, hdr, nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	if err := kept.decode(msg, body); err != nil {
		return h, hdr, nil, fmt.Errorf("%s v%d: malformed request: %w", kmsg.NameForKey(key), version, err)
	}
	return h, hdr, msg, nil
}

// dispatch decodes one request frame and starts its handler. An error means
// the connection must be closed.
func (c *conn) dispatch(frame []byte) (*pending, error) {
	if c.auth != nil && c.auth.phase == authRaw {
		return c.handleRawToken(frame)
	}
	p := c.takeSpare(frame)
	h, hdr, msg, err := decodeRequestInto(frame, &p.keep, &c.clientID)
	if err == errUnsupportedApiVersions {
		c.logger().Debug("unsupported ApiVersions version, answering v0 with UNSUPPORTED_VERSION (a client that then downgrades)", "version", hdr.Version)
		p.out = protocol.EncodeResponse(hdr.CorrelationID, apiVersionsUnsupported())
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.gate(hdr.Key); err != nil {
		return nil, err
	}
	r := &p.req
	r.conn, r.hdr, r.msg, r.ctx, r.size, r.keep = c, hdr, msg, c.ctx, len(frame), &p.keep
	if framePooled[hdr.Key] {
		p.frame = frame
	}
	if err := c.b.injectFault(&h, r); err != nil {
		return nil, err
	}
	if h.async {
		p.done = make(chan struct{})
		go c.run(h, r, p)
	} else {
		p.recycle = reusableKey(hdr.Key)
		c.run(h, r, p) // in the reader: the next request waits, as in Kafka
		p.closeAfter = r.closeAfter
	}
	return p, nil
}

func (c *conn) run(h handler, r *request, p *pending) {
	start := time.Now()
	handedOff := false
	defer func() {
		if !handedOff && p.done != nil {
			close(p.done)
		}
	}()
	defer func() {
		if v := recover(); v != nil {
			c.logger().Error("handler panic", "api", kmsg.NameForKey(r.hdr.Key), "version", r.hdr.Version, "panic", v)
			p.fatal = fmt.Errorf("internal error handling %s", kmsg.NameForKey(r.hdr.Key))
		}
	}()
	// The authorizer first, as Kafka does: a refused client gets its
	// authorization error, not NOT_COORDINATOR.
	resp, merge := c.b.authorizeRequest(r)
	var err error
	if resp == nil {
		if resp = c.b.notCoordinator(h, r.msg); resp == nil {
			resp, err = h.fn(c.b, r)
		}
		if merge != nil && err == nil && resp != nil {
			merge(resp)
		}
	}
	if ix := c.b.quotas.Index(); ix != nil && err == nil && !r.quotaDone {
		d := time.Since(start)
		if h.async {
			d = 0 // JoinGroup, SyncGroup: their time is spent parked, not working
		}
		c.b.throttleAfterHandler(r, ix, d)
	}
	if err == nil && r.wait != nil {
		handedOff = true
		if r.waitInWriter && p.done == nil {
			p.later = func() { c.complete(r, p, resp, start) }
			return
		}
		if p.done == nil {
			p.done = make(chan struct{})
		}
		go c.complete(r, p, resp, start)
		return
	}
	c.finish(r, p, resp, err, start)
}

// complete runs a handler's wait and then answers, off the reader.
func (c *conn) complete(r *request, p *pending, resp kmsg.Response, start time.Time) {
	if p.done != nil {
		defer close(p.done)
	}
	defer func() {
		if v := recover(); v != nil {
			c.logger().Error("handler panic", "api", kmsg.NameForKey(r.hdr.Key), "version", r.hdr.Version, "panic", v)
			p.fatal = fmt.Errorf("internal error handling %s", kmsg.NameForKey(r.hdr.Key))
		}
	}()
	r.wait()
	c.finish(r, p, resp, nil, start)
}

// finish turns a handler's outcome into the pending response.
func (c *conn) finish(r *request, p *pending, resp kmsg.Response, err error, start time.Time) {
	c.b.observeRequest(r, resp, start)
	if err == nil {
		c.applyThrottle(r, resp)
	}
	switch {
	case err != nil:
		p.fatal = err
	case r.noResponse:
	case r.out != nil:
		p.out, p.release = r.out, r.release
	default:
		c.b.rewriteEndpoints(r, resp)
		resp.SetVersion(r.hdr.Version)
		p.out = p.keep.encode(r.hdr.CorrelationID, resp)
	}
	if p.out == nil && r.release != nil {
		r.release()
	}
}

func (c *conn) writeLoop(done chan struct{}) {
	defer c.b.srv.wg.Done()
	broken := false
	for p := range c.queue {
		p.await()
		broken = !c.deliver(p, broken)
		c.queued.Add(-1)
	}
	if c.parking.Load() {
		close(done) // the reader closed the queue to park the connection
		return
	}
	c.end()
}

// parkable tells whether the connection may be parked when idle: a plain
// TCP connection past its authentication (a TLS connection may hold
// decrypted bytes the parker cannot see).
func (c *conn) parkable() bool {
	if c.noPark || c.bw != nil || !c.auth.authenticated() {
		return false
	}
	_, ok := c.nc.(*net.TCPConn)
	return ok
}

// park hands the idle connection to the parker: its writer (idle, as
// nothing is queued) ends, its read buffer is dropped, and its
// reader ends when park returns true. lastActive is when it last sent a
// request, within 1% of parkAfter. On false the reader reads on, and the
// connection is not parked again.
func (c *conn) park(pk *parker, lastActive time.Time) bool {
	if c.queue != nil {
		c.parking.Store(true)
		close(c.queue)
		<-c.writerDone
		c.parking.Store(false)
		c.queue, c.writerDone = nil, nil
	}
	br := c.br
	c.br, c.spare = nil, nil
	if !pk.park(c, lastActive) {
		c.br, c.noPark = br, true
		return false
	}
	// From here a new reader may already run. The buffer is dropped
	// rather than pooled: a sync.Pool keeps what it holds until two
	// collections have passed, and an idle broker collects every two
	// minutes; the parker hands it back to the system (released).
	pk.released(br.Size())
	return true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// end closes the connection and forgets it, once the reader has stopped
// and every answer it queued is written or dropped: in the writer, or in
// the reader when it never started one.
func (c *conn) end() {
	s := &c.b.srv
	c.nc.Close()
	c.b.shareSessions.Close(c) // the share sessions opened on c
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.active.Add(-1)
	s.wg.Done()
}

// deliver writes one handled request's answer (unless the connection is
// already broken), closes the connection when the answer says so, and
// releases what the request held. It returns whether the connection is
// still usable. The writer calls it in request order; the reader calls it
// only when the writer has nothing queued.
func (c *conn) deliver(p *pending, broken bool) bool {
	if p.fatal != nil && !broken {
		c.logger().Warn("closing connection", "err", p.fatal)
		broken = true
		c.cancel()
		c.nc.Close()
	}
	if p.out != nil && !broken {
		if err := c.write(p.out); err != nil {
			broken = true
			c.cancel()
			c.nc.Close()
		}
	}
	if p.closeAfter && !broken {
		broken = true
		c.cancel()
		c.nc.Close()
	}
	if p.release != nil {
		p.release()
	}
	if p.frame != nil {
		protocol.PutFrame(p.frame)
		p.frame = nil
	}
	c.b.reqBytes.release(p.bytes)
	return !broken
}

// await waits for the answer to be ready.
func (p *pending) await() {
	if f := p.later; f != nil {
		p.later = nil
		f()
	}
	if p.done != nil {
		<-p.done
	}
}

// handled reports whether the request's answer is ready.
func (p *pending) handled() bool {
	if p.later != nil {
		return false
	}
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// byteBudget bounds the bytes of requests read but not yet answered, across
// all connections (queued.max.request.bytes): a flood of large requests
// waits for room instead of growing the heap. A single request larger than
// the budget is admitted alone.
type byteBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	wake  chan struct{} // closed and replaced on every release
}

func (bb *byteBudget) acquire(ctx context.Context, n int64) error {
	for {
		bb.mu.Lock()
		if bb.limit <= 0 || bb.used == 0 || bb.used+n <= bb.limit {
			bb.used += n
			bb.mu.Unlock()
			return nil
		}
		if bb.wake == nil {
			bb.wake = make(chan struct{})
		}
		w := bb.wake
		bb.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (bb *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	bb.mu.Lock()
	bb.used -= n
	if bb.wake != nil {
		close(bb.wake)
		bb.wake = nil
	}
	bb.mu.Unlock()
}
