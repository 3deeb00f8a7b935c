package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap/zapcore"
)

// Node is one broker's membership in the cluster: its embedded etcd member
// (if it is a voter), its leased registration, its candidacy for
// controller, and a mirror of the cluster metadata.
type Node struct {
	// controllerPasses counts the controller's passes over the partitions
	// (runController) while this node is the controller.
	controllerPasses atomic.Int64

	cfg  Config
	log  *slog.Logger
	ttl  int64 // lease TTL in seconds
	etcd *embed.Etcd
	cli  *clientv3.Client

	clusterID string

	// base anchors fenceAt on the monotonic clock.
	base    time.Time
	fenceAt atomic.Int64 // nanoseconds since base after which the node is fenced
	closing atomic.Bool
	inc     atomic.Pointer[incarnation]
	// logDirOffline and stopping are what the registration says
	// (SetLogDirOffline, SetControlledShutdown); regMu orders the
	// registration's rewrites.
	logDirOffline atomic.Bool
	stopping      atomic.Bool
	regMu         sync.Mutex

	ctx       context.Context // cancelled by Close after the lease is revoked
	cancel    context.CancelFunc
	loopCtx   context.Context // cancelled first by Close: stops the session loop
	loopStop  context.CancelFunc
	wg        sync.WaitGroup // watch loop
	loopWG    sync.WaitGroup // session loop
	closeOnce sync.Once

	mu      sync.Mutex
	meta    *Metadata
	changed chan struct{}
}

// incarnation is one lease of the node: its broker registration and its
// controller candidacy live and die with it.
type incarnation struct {
	lease   clientv3.LeaseID
	epoch   int64     // create revision of /gregor/brokers/<id>
	granted time.Time // when the lease's grant was sent
	ttl     int64     // the granted TTL, seconds
	sess    *concurrency.Session
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start joins the cluster: it starts the embedded etcd member if NodeID is
// one of the voters and waits until the member has joined a quorum (bounded
// by ctx), stores or learns the cluster id, registers the broker with a
// lease, loads the metadata and starts campaigning for controller.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{
		cfg:     cfg,
		log:     cfg.Logger.With("node", cfg.NodeID),
		ttl:     ttlSeconds(&cfg),
		base:    time.Now(),
		changed: make(chan struct{}),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.loopCtx, n.loopStop = context.WithCancel(n.ctx)
	ok := false
	defer func() {
		if !ok {
			n.teardown()
		}
	}()
	switch v, isVoter := voterOf(&cfg); {
	case len(cfg.Endpoints) > 0:
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   cfg.Endpoints,
			DialTimeout: 5 * time.Second,
			Context:     n.ctx,
			Logger:      newZapLogger(n.log, zapcore.WarnLevel),
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: connect to etcd %v: %w", cfg.Endpoints, err)
		}
		n.cli = cli
	case isVoter:
		if err := n.startMember(ctx, v); err != nil {
			return nil, err
		}
		n.cli = v3client.New(n.etcd.Server)
	case len(cfg.Voters) > 0:
		return nil, fmt.Errorf("cluster: node %d is not in controller.quorum.voters; brokers that are not voters need etcd.endpoints", cfg.NodeID)
	default:
		return nil, errors.New("cluster: neither controller.quorum.voters nor etcd.endpoints is set")
	}
	if err := n.initClusterID(ctx); err != nil {
		return nil, err
	}
	inc, err := n.register(ctx)
	if err != nil {
		return nil, err
	}
	n.wg.Add(1)
	go n.watchLoop()
	if err := n.waitLoaded(ctx); err != nil {
		inc.cancel()
		return nil, err
	}
	n.noteRenewal(inc.granted, inc.ttl)
	n.loopWG.Add(1)
	go n.sessionLoop(inc)
	ok = true
	return n, nil
}

func (n *Node) startMember(ctx context.Context, v Voter) error {
	ec := embed.NewConfig()
	ec.Name = memberName(v)
	ec.Dir = filepath.Join(n.cfg.DataDir, "__etcd")
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port)))}
	listen := peer
	if ip := net.ParseIP(v.Host); ip == nil && v.Host != "localhost" {
		listen.Host = net.JoinHostPort("0.0.0.0", strconv.Itoa(int(v.Port)))
	}
	if n.cfg.PeerListen != "" {
		host, port, err := net.SplitHostPort(n.cfg.PeerListen)
		if err != nil {
			return fmt.Errorf("cluster: etcd peer listener %q: %w", n.cfg.PeerListen, err)
		}
		if host == "" {
			host = "0.0.0.0"
		}
		listen.Host = net.JoinHostPort(host, port)
	}
	ec.ListenPeerUrls = []url.URL{listen}
	ec.AdvertisePeerUrls = []url.URL{peer}
	// The broker talks to its member in-process (v3client): no client port.
	ec.ListenClientUrls, ec.AdvertiseClientUrls, ec.ListenClientHttpUrls = nil, nil, nil
	var initial []string
	for _, o := range n.cfg.Voters {
		initial = append(initial, memberName(o)+"="+o.PeerURL())
	}
	ec.InitialCluster = strings.Join(initial, ",")
	ec.InitialClusterToken = "gregor"
	ec.ClusterState = embed.ClusterStateFlagNew // ignored once the member has data
	ec.AutoCompactionMode = "revision"
	ec.AutoCompactionRetention = "10000"
	ec.UnsafeNoFsync = unsafeNoFsync
	// A member notices a dead raft leader after 0.5-1 s instead of 1-2 s;
	// a new leader extends every lease by one election timeout, so this
	// bounds the failover of a broker that also hosted the raft leader
	// (see the package documentation, # Fencing).
	ec.TickMs, ec.ElectionMs = 50, 500
	// CreateTopic writes every partition of a topic in one transaction.
	ec.MaxTxnOps = 10240
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(n.log, zapcore.WarnLevel))
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return fmt.Errorf("cluster: start etcd member %s: %w", ec.Name, err)
	}
	n.etcd = e
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("cluster: etcd member %s: %w", ec.Name, err)
	case <-ctx.Done():
		return fmt.Errorf("cluster: etcd member %s did not join a quorum: %w", ec.Name, ctx.Err())
	}
}

// initClusterID stores cfg.ClusterID (or a fresh one) unless etcd has one.
func (n *Node) initClusterID(ctx context.Context) error {
	id := n.cfg.ClusterID
	if id == "" {
		u := metadata.NewUUID()
		id = base64.RawURLEncoding.EncodeToString(u[:])
	}
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(keyClusterID), "=", 0)).
		Then(clientv3.OpPut(keyClusterID, id)).
		Else(clientv3.OpGet(keyClusterID)).Commit()
	if err != nil {
		return fmt.Errorf("cluster: store cluster id: %w", err)
	}
	if !resp.Succeeded {
		id = string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
	}
	n.clusterID = id
	return nil
}

// ClusterID returns the cluster id stored in etcd.
func (n *Node) ClusterID() string { return n.clusterID }

// NodeID returns the node's id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// register grants a lease and writes /gregor/brokers/<id> with it. A
// registration left by an earlier incarnation of this node id (a restart
// before its lease expired) is removed first by revoking its lease, so the
// controller sees the old incarnation die.
func (n *Node) register(ctx context.Context) (*incarnation, error) {
	sent := time.Now()
	g, err := n.cli.Grant(ctx, n.ttl)
	if err != nil {
		return nil, fmt.Errorf("cluster: grant lease: %w", err)
	}
	key := brokerKey(n.cfg.NodeID)
	val := n.registration()
	var epoch int64
	for epoch == 0 {
		resp, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(g.ID)),
				clientv3.OpPut(registeredKey(n.cfg.NodeID), string(val))).
			Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return nil, fmt.Errorf("cluster: register broker: %w", err)
		}
		if resp.Succeeded {
			epoch = resp.Header.Revision
			break
		}
		old := resp.Responses[0].GetResponseRange().Kvs
		if len(old) == 0 {
			continue
		}
		n.log.Warn("removing an earlier registration of this node id", "lease", old[0].Lease)
		if old[0].Lease != 0 {
			if _, err := n.cli.Revoke(ctx, clientv3.LeaseID(old[0].Lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return nil, fmt.Errorf("cluster: revoke earlier registration: %w", err)
			}
		} else if _, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", old[0].ModRevision)).
			Then(clientv3.OpDelete(key)).Commit(); err != nil {
			return nil, fmt.Errorf("cluster: remove earlier registration: %w", err)
		}
	}
	sess, err := concurrency.NewSession(n.cli, concurrency.WithLease(g.ID),
		concurrency.WithTTL(int(n.ttl)), concurrency.WithContext(context.Background()))
	if err != nil {
		return nil, fmt.Errorf("cluster: session: %w", err)
	}
	inc := &incarnation{lease: g.ID, epoch: epoch, granted: sent, ttl: g.TTL, sess: sess, done: make(chan struct{})}
	inc.ctx, inc.cancel = context.WithCancel(n.loopCtx)
	n.inc.Store(inc)
	n.log.Info("registered broker", "epoch", epoch, "lease", int64(g.ID), "ttl", g.TTL)
	return inc, nil
}

// registration is the value of this node's /gregor/brokers/<id>.
func (n *Node) registration() []byte {
	val, _ := json.Marshal(brokerJSON{ID: n.cfg.NodeID, Host: n.cfg.Host, Port: n.cfg.Port, Rack: n.cfg.Rack,
		Listeners: n.cfg.Listeners, LogDirOffline: n.logDirOffline.Load(), ControlledShutdown: n.stopping.Load(), SchemaRegistry: n.cfg.SchemaRegistry})
	return val
}

// SetLogDirOffline says in this broker's registration whether its log dir
// is offline (Broker.LogDirOffline), keeping the registration's lease and
// broker epoch; a later registration (after a lost lease) says it too. It
// returns ErrFenced without a live registration.
func (n *Node) SetLogDirOffline(ctx context.Context, offline bool) error {
	return n.updateRegistration(ctx, func() { n.logDirOffline.Store(offline) })
}

// SetControlledShutdown says in this broker's registration that it is
// stopping (Broker.ControlledShutdown), so that the controller moves the
// leadership of its partitions away before it goes. It returns ErrFenced
// without a live registration.
func (n *Node) SetControlledShutdown(ctx context.Context) error {
	return n.updateRegistration(ctx, func() { n.stopping.Store(true) })
}

// updateRegistration applies set to what the registration says and
// rewrites it under the same lease, if it is still this incarnation's.
func (n *Node) updateRegistration(ctx context.Context, set func()) error {
	n.regMu.Lock()
	defer n.regMu.Unlock()
	set()
	inc := n.inc.Load()
	if inc == nil || n.Fenced() {
		return ErrFenced
	}
	key := brokerKey(n.cfg.NodeID)
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", inc.epoch)).
		Then(clientv3.OpPut(key, string(n.registration()), clientv3.WithLease(inc.lease))).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: update registration: %w", err)
	}
	if !resp.Succeeded {
		return ErrFenced // registered anew meanwhile, saying what it says now
	}
	n.log.Info("registration updated", "log_dir_offline", n.logDirOffline.Load(), "controlled_shutdown", n.stopping.Load())
	return nil
}

// fenceMargin is how long before the earliest possible expiry of its lease
// a node considers itself fenced.
func (n *Node) fenceMargin() time.Duration { return time.Duration(n.ttl) * time.Second / 8 }

// noteRenewal records that a lease renewal (or grant) sent at sent was
// acknowledged with ttl seconds: etcd's expiry of the lease is at least
// sent+ttl on any clock running at the rate of ours.
func (n *Node) noteRenewal(sent time.Time, ttl int64) {
	at := int64(sent.Sub(n.base) + time.Duration(ttl)*time.Second - n.fenceMargin())
	for {
		cur := n.fenceAt.Load()
		if at <= cur || n.fenceAt.CompareAndSwap(cur, at) {
			return
		}
	}
}

// Fenced reports whether the node cannot be sure its lease is alive: the
// last acknowledged renewal was sent longer ago than the lease TTL minus a
// margin, or the lease is known lost, or the node is closing. A fenced
// broker must not accept writes as a partition leader.
func (n *Node) Fenced() bool {
	return n.closing.Load() || int64(time.Since(n.base)) >= n.fenceAt.Load()
}

// sessionLoop keeps the node registered: it runs one incarnation until its
// lease is lost, then registers anew, until Close.
func (n *Node) sessionLoop(inc *incarnation) {
	defer n.loopWG.Done()
	for {
		n.runIncarnation(inc)
		if n.loopCtx.Err() != nil {
			return
		}
		n.log.Warn("lease lost; registering again")
		for {
			ctx, cancel := context.WithTimeout(n.loopCtx, time.Duration(n.ttl)*time.Second)
			var err error
			inc, err = n.register(ctx)
			if err == nil {
				// Unfenced only once the metadata is at the new
				// registration: it then shows every leadership the
				// controller moved away while the lease was lost, so
				// the broker neither leads nor coordinates on what
				// it last saw (Kafka's broker likewise stays fenced
				// until it has caught up with the metadata log).
				if _, err = n.WaitForRevision(ctx, inc.epoch); err == nil {
					n.noteRenewal(inc.granted, inc.ttl)
				} else {
					n.log.Warn("metadata not at the new registration within the session timeout; fenced until it is", "epoch", inc.epoch, "err", err)
				}
				cancel()
				break
			}
			cancel()
			if n.loopCtx.Err() != nil {
				return
			}
			n.log.Warn("register broker", "err", err)
			sleepCtx(n.loopCtx, 500*time.Millisecond)
		}
	}
}

func (n *Node) runIncarnation(inc *incarnation) {
	defer close(inc.done)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.campaignLoop(inc)
	}()
	n.keepAliveLoop(inc)
	inc.cancel()
	wg.Wait()
	if n.loopCtx.Err() == nil {
		inc.sess.Orphan()
	}
}

// keepAliveLoop renews the lease every TTL/4, recording the send time of
// each acknowledged renewal for Fenced. It returns when the lease is lost or
// the incarnation ends.
func (n *Node) keepAliveLoop(inc *incarnation) {
	interval := time.Duration(n.ttl) * time.Second / 4
	fenced := false
	var lastErr error
	for inc.ctx.Err() == nil {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(inc.ctx, interval)
		resp, err := n.cli.KeepAliveOnce(ctx, inc.lease)
		cancel()
		switch {
		case err == nil:
			if m := n.Metadata(); m != nil && m.Revision >= inc.epoch {
				n.noteRenewal(sent, resp.TTL)
			}
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			n.fenceAt.Store(0)
			return
		case inc.ctx.Err() == nil:
			lastErr = err
			n.log.Debug("lease keepalive", "err", err)
		}
		// Say when the broker stops and starts accepting writes as a
		// leader: an operator sees a fenced broker (cut off from the
		// metadata quorum) in its log, not only in its clients' errors.
		if f := n.Fenced(); f != fenced && inc.ctx.Err() == nil {
			fenced = f
			if f {
				n.log.Warn("fenced: no lease renewal acknowledged within the session timeout; refusing writes as a leader", "lease", int64(inc.lease), "err", lastErr)
			} else {
				n.log.Info("unfenced: lease renewal acknowledged again", "lease", int64(inc.lease))
			}
		}
		sleepCtx(inc.ctx, time.Until(sent.Add(interval)))
	}
}

// campaignLoop campaigns for controller while the incarnation lives and
// runs the controller while elected.
func (n *Node) campaignLoop(inc *incarnation) {
	id := strconv.Itoa(int(n.cfg.NodeID))
	for inc.ctx.Err() == nil {
		if n.Fenced() {
			sleepCtx(inc.ctx, 200*time.Millisecond)
			continue
		}
		el := concurrency.NewElection(inc.sess, keyController)
		if err := el.Campaign(inc.ctx, id); err != nil {
			if inc.ctx.Err() == nil {
				n.log.Debug("campaign", "err", err)
				sleepCtx(inc.ctx, 500*time.Millisecond)
			}
			continue
		}
		n.log.Info("elected controller", "key", el.Key(), "rev", el.Rev())
		n.runController(inc, el)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		el.Resign(ctx)
		cancel()
		n.log.Info("resigned controller")
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// watchLoop mirrors /gregor/ and publishes a snapshot per change.
func (n *Node) watchLoop() {
	defer n.wg.Done()
	for n.ctx.Err() == nil {
		resp, err := n.cli.Get(n.ctx, keyPrefix, clientv3.WithPrefix())
		if err != nil {
			sleepCtx(n.ctx, 200*time.Millisecond)
			continue
		}
		rev := resp.Header.Revision
		st := newState(resp.Kvs, rev)
		n.publish(st.snapshot(rev))
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(n.ctx))
		for wr := range n.cli.Watch(wctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if wr.Err() != nil || wr.Canceled {
				break
			}
			for _, ev := range wr.Events {
				rev = ev.Kv.ModRevision
				if ev.Type == mvccpb.DELETE {
					st.del(string(ev.Kv.Key), rev)
				} else {
					st.put(ev.Kv)
				}
			}
			if len(wr.Events) > 0 {
				n.publish(st.snapshot(rev))
			}
		}
		wcancel()
		sleepCtx(n.ctx, 100*time.Millisecond)
	}
}

func (n *Node) publish(m *Metadata) {
	n.mu.Lock()
	n.meta = m
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
}

func (n *Node) waitLoaded(ctx context.Context) error {
	for {
		m, ch := n.Subscribe()
		if m != nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("cluster: load metadata: %w", ctx.Err())
		}
	}
}

// Metadata returns the latest snapshot of the cluster metadata.
func (n *Node) Metadata() *Metadata {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.meta
}

// Changes returns a channel closed at the next metadata change.
func (n *Node) Changes() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed
}

// Subscribe returns the latest snapshot and a channel closed when a newer
// one is published, as one atomic pair.
func (n *Node) Subscribe() (*Metadata, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.meta, n.changed
}

// WaitForRevision waits until the snapshot has reached etcd revision rev.
func (n *Node) WaitForRevision(ctx context.Context, rev int64) (*Metadata, error) {
	for {
		m, ch := n.Subscribe()
		if m != nil && m.Revision >= rev {
			return m, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close leaves the cluster: it stops campaigning (resigning the controller
// role), revokes the lease (which removes the broker registration at once)
// and stops the embedded etcd member.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closing.Store(true)
		n.loopStop()
		n.loopWG.Wait()
		if inc := n.inc.Load(); inc != nil {
			<-inc.done
			if err := inc.sess.Close(); err != nil {
				n.log.Debug("revoke lease", "err", err)
			}
		}
		n.teardown()
	})
	return nil
}

func (n *Node) teardown() {
	n.closing.Store(true)
	n.loopStop()
	n.cancel()
	n.wg.Wait()
	if n.cli != nil {
		n.cli.Close()
	}
	if n.etcd != nil {
		n.etcd.Close()
	}
}

// kill stops the node as a crash would: the embedded member stops at once
// and nothing is revoked or resigned. Tests only.
func (n *Node) kill() {
	n.closing.Store(true)
	if n.etcd != nil {
		n.etcd.Server.HardStop()
	}
	n.loopStop()
	n.loopWG.Wait()
	if inc := n.inc.Load(); inc != nil {
		<-inc.done
	}
	n.teardown()
}
