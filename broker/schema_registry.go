package broker

// The schema registry (package schemaregistry): Confluent Schema Registry's
// REST API on the listener schema.registry.listeners names (an http:// URL,
// e.g. http://127.0.0.1:8081), with its state in the topic _schemas (one
// partition, compacted, as Confluent's kafkastore.topic), created on first
// use. schemasLog gives the registry that partition: Read returns its
// records up to the high watermark; Append writes one record only while
// the log end is the one the registry read, so two writers never give out
// the same id, and returns once the record is committed.
//
// TLS and authentication, as on the admin listener:
//
//	schema.registry.listeners=https://HOST:PORT   HTTPS, with
//	schema.registry.ssl.*                          the listener ssl.* settings (key and trust
//	                                               stores in PEM, PKCS12 or JKS, client.auth, …)
//	schema.registry.auth=none|basic|mtls|basic,mtls
//
// basic checks HTTP Basic credentials against the SCRAM users as SASL/PLAIN
// does; mtls takes a client certificate verified against the trust store.
// A request that authenticates by neither gets Confluent's 401 answer,
// {"error_code":401,"message":"Unauthorized"}. Any authenticated user may
// use the whole API (Confluent's open-source registry has no finer rule).
//
// On a single node this broker serves every request. In a cluster the
// registry of the leader of _schemas-0 does, as Confluent's leader does:
// each broker registers its registry's URL with its registration, and the
// others forward each request to the leader's (reverse proxy, once: a
// forwarded request is served where it lands), so a schema registered
// through one broker is served by every other at once.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/metadata"
	"github.com/gregor-broker/gregor/schemaregistry"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// schemasTopicName is the registry's topic, Confluent's default.
const schemasTopicName = "_schemas"

// schemaRegistry is the registry's listener and state; nil without one.
type schemaRegistry struct {
	ln     net.Listener
	srv    *http.Server
	log    *schemasLog
	scheme string          // http or https
	fwd    *http.Transport // to the leader's registry: TLS as this one's
	reg    *schemaregistry.Registry
}

// listenSchemaRegistry binds schema.registry.listeners; nil when unset.
func (b *Broker) listenSchemaRegistry() (*schemaRegistry, error) {
	v := strings.TrimSpace(b.cfg.Props["schema.registry.listeners"])
	if v == "" {
		return nil, nil
	}
	if strings.Contains(v, ",") {
		return nil, fmt.Errorf("schema.registry.listeners %q: one listener only", v)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("schema.registry.listeners %q: want http://HOST:PORT or https://HOST:PORT", v)
	}
	log := b.log.With("component", "schema-registry")
	var basic, mtls bool
	for _, m := range strings.Split(b.cfg.Props["schema.registry.auth"], ",") {
		switch strings.TrimSpace(m) {
		case "", "none":
		case "basic":
			basic = true
		case "mtls":
			mtls = true
		default:
			return nil, fmt.Errorf("schema.registry.auth %q: want none, basic, mtls or basic,mtls", b.cfg.Props["schema.registry.auth"])
		}
	}
	var st *ServerTLS
	fwd := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}
	switch {
	case u.Scheme == "https":
		if st, err = LoadServerTLS(b.cfg.Props, "schema.registry.", log); err != nil {
			return nil, err
		}
		sub := map[string]string{}
		for k, v := range b.cfg.Props {
			if rest, ok := strings.CutPrefix(k, "schema.registry."); ok && strings.HasPrefix(rest, "ssl.") {
				sub[rest] = v
			}
		}
		if fwd.TLSClientConfig, err = authn.ClientTLSConfig(sub); err != nil {
			return nil, fmt.Errorf("schema.registry.ssl.*: %w", err)
		}
	case mtls:
		return nil, errors.New("schema.registry.auth=mtls needs an https:// listener")
	case basic:
		log.Warn("schema.registry.auth=basic over plain HTTP sends passwords in the clear; use an https:// listener")
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("schema.registry.listeners: %w", err)
	}
	sl := &schemasLog{b: b}
	reg, err := schemaregistry.New(schemaregistry.Config{Log: sl, Logger: log})
	if err != nil {
		ln.Close()
		return nil, err
	}
	r := &schemaRegistry{ln: ln, log: sl, scheme: u.Scheme, fwd: fwd, reg: reg}
	h := r.forwarding(reg.Handler())
	if basic || mtls {
		h = registryAuth(b, st, basic, mtls, h)
	}
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if st != nil {
		r.srv.TLSConfig = st.Config()
		r.ln = tls.NewListener(ln, r.srv.TLSConfig)
	}
	return r, nil
}

// registryAuth lets through a request that authenticates: a verified
// client certificate (mtls) or HTTP Basic credentials of a SCRAM user
// (basic); else Confluent's 401.
func registryAuth(b *Broker, st *ServerTLS, basic, mtls bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if mtls && req.TLS != nil && st != nil {
			if _, ok := st.Principal(*req.TLS); ok {
				next.ServeHTTP(w, req)
				return
			}
		}
		if basic {
			if user, pass, ok := req.BasicAuth(); ok {
				err := b.CheckPassword(user, pass)
				if err == nil {
					next.ServeHTTP(w, req)
					return
				}
				if !errors.Is(err, ErrBadCredentials) {
					b.log.Warn("schema registry: checking a password", "user", user, "err", err)
				}
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry"`)
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error_code":401,"message":"Unauthorized"}`)
	})
}

// url is the registry's URL for the other brokers: its bound address, with
// host in place of an unspecified IP; "" without a registry.
func (r *schemaRegistry) url(host string) string {
	if r == nil {
		return ""
	}
	a := r.ln.Addr().(*net.TCPAddr)
	h := a.IP.String()
	if a.IP.IsUnspecified() {
		h = host
	}
	return r.scheme + "://" + net.JoinHostPort(h, strconv.Itoa(a.Port))
}

// forwardedHeader marks a request one broker forwarded to another.
const forwardedHeader = "X-Gregor-Forwarded"

// forwarding serves a request with local when this broker's registry is
// the one to (a single node, the leader of _schemas-0, no leader known, a
// request already forwarded), else forwards it to the leader's.
func (r *schemaRegistry) forwarding(local http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		target := ""
		if req.Header.Get(forwardedHeader) == "" {
			target = r.leaderURL()
		}
		if target == "" {
			local.ServeHTTP(w, req)
			return
		}
		u, err := url.Parse(target)
		if err != nil {
			local.ServeHTTP(w, req)
			return
		}
		rp := &httputil.ReverseProxy{Transport: r.fwd, Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Header.Set(forwardedHeader, "1")
		}}
		rp.ServeHTTP(w, req)
	})
}

// leaderURL is the registry URL of the leader of _schemas-0 when that is
// another broker; "" when this broker serves (a single node, the leader,
// no leader or URL known yet).
func (r *schemaRegistry) leaderURL() string {
	b := r.log.b
	if b.cluster == nil {
		return ""
	}
	if _, err := r.log.topic(); err != nil {
		return ""
	}
	// A topic just created has its leader elected within moments.
	leader := func() (int32, *metadata.Image) {
		md := b.cluster.node.Metadata()
		if md == nil || md.Topics[schemasTopicName] == nil || len(md.Topics[schemasTopicName].Partitions) == 0 {
			return -1, md
		}
		return md.Topics[schemasTopicName].Partitions[0].Leader, md
	}
	b.awaitMetadata(5*time.Second, func() bool { id, _ := leader(); return id >= 0 })
	id, md := leader()
	if id < 0 || id == b.nodeID {
		return ""
	}
	return md.Brokers[id].SchemaRegistry
}

// SchemaRegistryAddr is the schema registry's bound address; nil without
// one.
func (b *Broker) SchemaRegistryAddr() net.Addr {
	if b.registry == nil {
		return nil
	}
	return b.registry.ln.Addr()
}

// SchemaRegistry is this broker's schema registry, over its replica of
// _schemas-0 (the admin console reads it); nil without one. Its reads see
// what this broker's replica holds up to its high watermark; on a broker
// with no replica of _schemas-0 (a cluster of more than three) they fail.
func (b *Broker) SchemaRegistry() *schemaregistry.Registry {
	if b.registry == nil {
		return nil
	}
	return b.registry.reg
}

func (r *schemaRegistry) serve() {
	if err := r.srv.Serve(r.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		r.log.b.log.Error("schema registry listener", "err", err)
	}
}

func (r *schemaRegistry) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.srv.Shutdown(ctx)
}

// schemasLog is _schemas-0 as schemaregistry.Log.
type schemasLog struct {
	b  *Broker
	mu sync.Mutex // one conditional append at a time on this broker
}

// errSchemasConflict stops an append whose expected end is stale.
var errSchemasConflict = schemaregistry.ErrConflict

// partition returns this broker's replica of _schemas-0, creating the
// topic when needed.
func (l *schemasLog) partition() (*partition, error) {
	if _, err := l.topic(); err != nil {
		return nil, err
	}
	// A topic just created in a cluster gets its replica here when this
	// broker applies the metadata naming it: wait for that a moment.
	local := func() *partition {
		if t := l.b.lookupTopic(schemasTopicName); t != nil {
			if p := partitionAt(l.b.partitionsOf(t), 0); p != nil && p.log != nil {
				return p
			}
		}
		return nil
	}
	if l.b.cluster != nil && local() == nil && !l.elsewhere() {
		l.b.awaitMetadata(metadataTimeout, func() bool { return local() != nil })
	}
	if p := local(); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%s-0 has no replica on this broker", schemasTopicName)
}

// elsewhere tells whether the cluster's metadata places every replica of
// _schemas-0 on other brokers: then there is nothing to wait for here.
func (l *schemasLog) elsewhere() bool {
	md := l.b.cluster.node.Metadata()
	if md == nil || md.Topics[schemasTopicName] == nil || len(md.Topics[schemasTopicName].Partitions) == 0 {
		return false
	}
	p := md.Topics[schemasTopicName].Partitions[0]
	return !slices.Contains(p.Replicas, l.b.nodeID) && !slices.Contains(p.AddingReplicas, l.b.nodeID)
}

// topic returns _schemas, creating it when needed.
func (l *schemasLog) topic() (*topic, error) {
	b := l.b
	t := b.lookupTopic(schemasTopicName)
	if t == nil {
		rf := int16(1)
		if b.cluster != nil {
			brokers, _ := b.brokersView()
			rf = int16(min(3, len(brokers)))
		}
		var err error
		if t, err = b.createTopicAssigned(schemasTopicName, 1, rf, nil, internalTopicConfigs()); err != nil {
			// In a cluster another broker may have created it, and this
			// broker's metadata not have it yet: wait for it a moment.
			if b.cluster != nil {
				b.awaitMetadata(metadataTimeout, func() bool { return b.lookupTopic(schemasTopicName) != nil })
			}
			if t = b.lookupTopic(schemasTopicName); t == nil {
				return nil, fmt.Errorf("creating %s: %w", schemasTopicName, err)
			}
		}
	}
	return t, nil
}

// Append implements schemaregistry.Log.
func (l *schemasLog) Append(ctx context.Context, expectedEnd int64, key, value []byte) (int64, error) {
	// A _schemas mirrored by a cluster link (another registry's, brought
	// over) is served as it is and written only by its source until
	// promoted.
	if _, msg := l.b.produceReadOnly(schemasTopicName); msg != "" {
		return 0, errors.New(msg)
	}
	p, err := l.partition()
	if err != nil {
		return 0, err
	}
	// Elected but not yet leading here (the metadata is being applied):
	// wait for it a moment rather than answer NOT_LEADER.
	if l.b.cluster != nil && p.leader.Load() == nil && l.leadsInMetadata() {
		l.b.awaitMetadata(5*time.Second, func() bool { return p.leader.Load() != nil || !l.leadsInMetadata() })
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := groupLog{b: l.b, topic: schemasTopicName}
	target, wait, err := g.appendBatch(0, func(p *partition) (int64, error) {
		if end := p.log.LogEndOffset(); end != expectedEnd {
			return 0, errSchemasConflict
		}
		batch := buildBatch([]coordinator.LogRecord{{Key: key, Value: value}}, l.b.cfg.Now().UnixMilli())
		res, err := p.log.Append(batch, storage.AppendOptions{LeaderEpoch: p.epoch.Load(), LogAppendTime: -1})
		return res.LastOffset, err
	})
	if err != nil {
		return 0, err
	}
	if err := wait(); err != nil {
		return 0, err
	}
	return target - 1, nil
}

// leadsInMetadata tells whether the cluster's metadata names this broker
// the leader of _schemas-0.
func (l *schemasLog) leadsInMetadata() bool {
	md := l.b.cluster.node.Metadata()
	if md == nil {
		return false
	}
	t := md.Topics[schemasTopicName]
	return t != nil && len(t.Partitions) > 0 && t.Partitions[0].Leader == l.b.nodeID
}

// Read implements schemaregistry.Log: the records from from, up to about
// 1 MiB of them, below the high watermark.
//
// In a cluster a broker that does not lead _schemas-0 reads from its
// leader (a Fetch up to the leader's high watermark), not from its own
// replica, which lags: its view (schema ID validation, the console)
// then holds every schema the leader acknowledged, one just registered
// too, and a broker with no replica at all has one.
func (l *schemasLog) Read(ctx context.Context, from int64) ([]schemaregistry.Record, int64, error) {
	if leader, ok := l.remoteLeader(); ok {
		return l.readRemote(ctx, leader, from)
	}
	p, err := l.partition()
	if err != nil {
		return nil, 0, err
	}
	end := p.log.HighWatermark()
	from = max(from, p.log.LogStartOffset())
	if from >= end {
		return nil, end, nil
	}
	var recs []schemaregistry.Record
	for off := from; off < end && len(recs) == 0; {
		rr, err := p.log.Read(off, 1<<20, true)
		if err != nil {
			return nil, 0, err
		}
		buf, err := rr.Slice.ReadAll()
		rr.Slice.Release()
		if err != nil {
			return nil, 0, err
		}
		next, err := schemaRecords(buf, off, end, &recs)
		if err != nil {
			return nil, 0, err
		}
		if next <= off {
			break // nothing whole to read: the registry sees the end
		}
		off = next
	}
	return recs, end, nil // none: only markers or compacted gaps up to end
}

// schemaRecords appends the records of buf (batches from offset off)
// below end to recs and returns the offset after the last whole batch.
func schemaRecords(buf []byte, off, end int64, recs *[]schemaregistry.Record) (int64, error) {
	return replayBatches(buf, off, func(o int64, r coordinator.LogRecord) error {
		if o < end && !r.Control {
			*recs = append(*recs, schemaregistry.Record{Offset: o, Key: r.Key, Value: r.Value})
		}
		return nil
	})
}

// remoteLeader is the leader of _schemas-0 when, in a cluster, that is
// another broker (the topic created if needed).
func (l *schemasLog) remoteLeader() (int32, bool) {
	b := l.b
	if b.cluster == nil {
		return 0, false
	}
	if _, err := l.topic(); err != nil {
		return 0, false
	}
	md := b.cluster.node.Metadata()
	if md == nil {
		return 0, false
	}
	mp, ok := md.Partition(schemasTopicName, 0)
	if !ok || mp.Leader < 0 || mp.Leader == b.nodeID {
		return 0, false
	}
	return mp.Leader, true
}

// readRemote is Read from the leader of _schemas-0: one Fetch from from
// (read_uncommitted, bounded by the leader's high watermark, which is the
// end returned).
func (l *schemasLog) readRemote(ctx context.Context, leader int32, from int64) ([]schemaregistry.Record, int64, error) {
	b := l.b
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = schemasTopicName
	if t := b.lookupTopic(schemasTopicName); t != nil {
		rt.TopicID = t.id
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = from, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	retried := false
	for {
		resp, err := b.peerRequest(ctx, leader, req)
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s-0 from broker %d: %w", schemasTopicName, leader, err)
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return nil, 0, fmt.Errorf("reading %s-0 from broker %d: an answer without the partition", schemasTopicName, leader)
		}
		got := fr.Topics[0].Partitions[0]
		if got.ErrorCode == kerr.OffsetOutOfRange.Code && from < got.LogStartOffset && !retried {
			from, retried = got.LogStartOffset, true // once more from the log start
			req.Topics[0].Partitions[0].FetchOffset = from
			continue
		}
		if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
			return nil, 0, fmt.Errorf("reading %s-0 from broker %d: %w", schemasTopicName, leader, err)
		}
		end := got.HighWatermark
		if from >= end {
			return nil, end, nil
		}
		var recs []schemaregistry.Record
		next, err := schemaRecords(got.RecordBatches, from, end, &recs)
		if err != nil {
			return nil, 0, err
		}
		if len(recs) > 0 || next <= from {
			return recs, end, nil // none and nothing whole: the registry sees the end
		}
		from = next // only markers: read on
		req.Topics[0].Partitions[0].FetchOffset = from
	}
}
