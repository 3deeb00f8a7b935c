package broker

// Cluster mode: with controller.quorum.voters (embedded etcd) or
// etcd.endpoints (external etcd) set, the broker is one node of a cluster.
// etcd (package cluster) holds the topics, their replica assignments and
// every partition's leader, leader epoch and ISR; this file makes the local
// logs follow that metadata: it opens the logs of the partitions assigned
// here, makes this broker the leader of the partitions it was elected for
// (a replication.Leader tracks the followers and moves the high
// watermark) and a follower of the others (a replication.Fetcher copies
// them from their leader), and proposes ISR changes to etcd as
// compare-and-set writes.
//
// Without those settings none of this runs: the broker is the single node
// it has always been, its metadata in __meta/topics.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/metadata"
	"github.com/gregor-broker/gregor/metastore"
	"github.com/gregor-broker/gregor/replication"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is what a broker needs of the cluster's metadata store: the
// metadata, changes to it, the broker's registration, and the writes a
// broker makes (topics, ISR changes, elections, reassignments, producer-id
// blocks, and the ACLs, quotas, users and dynamic configs that are cluster
// metadata). Its errors are package metadata's. Package cluster implements
// it on etcd (cluster.Node); Config.JoinCluster gives one to the broker.
type Cluster interface {
	// ClusterID is the cluster's id as the store holds it.
	ClusterID() string
	// Metadata is the latest metadata seen; Subscribe returns it with a
	// channel closed at the next change, Changes that channel alone, and
	// WaitForRevision waits until the metadata is at least at rev.
	Metadata() *metadata.Image
	Subscribe() (*metadata.Image, <-chan struct{})
	Changes() <-chan struct{}
	WaitForRevision(ctx context.Context, rev int64) (*metadata.Image, error)
	// Fenced reports that this broker's registration is not known to be
	// alive: it must not act as a leader.
	Fenced() bool
	SetLogDirOffline(ctx context.Context, offline bool) error
	SetControlledShutdown(ctx context.Context) error
	Close() error

	CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, assignment map[int32][]int32, configs map[string]string) (*metadata.Topic, error)
	DeleteTopic(ctx context.Context, name string) error
	CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32) error
	SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error
	UpdateTopicConfigs(ctx context.Context, name string, update func(current map[string]string) (map[string]string, error)) error
	AlterPartitions(ctx context.Context, changes []metadata.ISRChange) []metadata.ISRResult
	ElectLeaders(ctx context.Context, preferred bool, parts []metadata.TopicPartition) map[metadata.TopicPartition]error
	AlterPartitionReassignments(ctx context.Context, targets map[metadata.TopicPartition][]int32) map[metadata.TopicPartition]error
	ListPartitionReassignments(ctx context.Context, parts []metadata.TopicPartition) ([]metadata.Reassignment, error)
	AllocateProducerIDBlock(ctx context.Context, floor int64) (first, size int64, err error)
	// DescribeQuorum describes the metadata quorum (the store's
	// consensus group) as Kafka's DescribeQuorum does; see
	// 55_describe_quorum.go.
	DescribeQuorum(ctx context.Context) (*metadata.QuorumState, error)
	// UnregisterBroker forgets a broker id whose session has ended
	// (metadata.ErrBrokerNotRegistered, ErrBrokerAlive otherwise);
	// FencedBrokers are the ids registered without a live session. See
	// 64_unregister_broker.go.
	UnregisterBroker(ctx context.Context, id int32) error
	FencedBrokers(ctx context.Context) ([]metadata.Broker, error)

	// Collection is one of the record collections kept as cluster
	// metadata: "acls" (ACL bindings), "quotas" (client quotas),
	// "users" (SASL users), "links" (cluster links), "client-metrics"
	// (KIP-714 client metrics subscriptions).
	Collection(name string) metastore.Collection
}

// clusterState is what a broker knows of a cluster, nil on a single node.
type clusterState struct {
	node     Cluster
	fetchers *replication.Fetchers
	lagMax   time.Duration
	isrKick  chan struct{}
	applyMu  sync.Mutex                     // serialises applyMetadata
	applied  atomic.Pointer[metadata.Image] // the metadata the local state reflects
	// appliedTopics are the topics of applied whose local state and
	// roles were applied in full, by name (under applyMu): a newer
	// Image that shares a topic with it (package cluster makes each
	// snapshot share every topic an event did not touch) needs nothing
	// done for it while the brokers stay the same.
	appliedTopics map[string]*metadata.Topic
	peersMu       sync.Mutex
	peers         map[int32]*peer // clients for requests to other brokers

	// rackAwareReads is replica.selector.class = RackAwareReplicaSelector
	// (read_replica.go).
	rackAwareReads bool
}

// errNoClusterStore refuses cluster mode to a program that gave the broker
// no metadata store.
var errNoClusterStore = errors.New("cluster mode (controller.quorum.voters or etcd.endpoints) needs a metadata store, and this program sets no broker.Config.JoinCluster (cmd/gregor sets package cluster's)")

// clusterConfigured reports whether the properties ask for cluster mode.
func (c *Config) clusterConfigured() bool {
	return c.Props["controller.quorum.voters"] != "" || c.Props["etcd.endpoints"] != ""
}

// startCluster joins the cluster once the listener's address is known:
// it starts (or connects to) etcd, registers this broker and makes the
// local logs follow the metadata.
func (b *Broker) startCluster(host string, port int32) error {
	cfg := metadata.JoinConfig{
		NodeID:                b.nodeID,
		PeerListen:            b.srv.peerListen,
		DataDir:               b.cfg.DataDir,
		Host:                  host,
		Port:                  port,
		Listeners:             b.advertisedEndpoints(),
		Rack:                  b.cfg.Props["broker.rack"],
		SchemaRegistry:        b.registry.url(host),
		SessionTimeout:        time.Duration(b.cfg.int64Prop("broker.session.timeout.ms")) * time.Millisecond,
		UncleanLeaderElection: b.cfg.boolProp("unclean.leader.election.enable"),
		ClusterID:             b.clusterID,
		Logger:                b.log.With("component", "cluster"),
	}
	if v := b.cfg.Props["controller.quorum.voters"]; v != "" {
		voters, err := metadata.ParseVoters(v)
		if err != nil {
			return fmt.Errorf("controller.quorum.voters: %w", err)
		}
		cfg.Voters = voters
	}
	if e := b.cfg.Props["etcd.endpoints"]; e != "" {
		cfg.Endpoints = config.SplitList(e)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	node, err := b.cfg.JoinCluster(ctx, cfg)
	if err != nil {
		return fmt.Errorf("join cluster: %w", err)
	}
	if id := node.ClusterID(); id != b.clusterID {
		b.log.Info("adopting the cluster's id", "cluster_id", id, "was", b.clusterID)
		b.clusterID = id
		if err := b.writeMetaProperties(); err != nil {
			node.Close()
			return err
		}
	}
	cs := &clusterState{
		node:    node,
		lagMax:  time.Duration(b.cfg.int64Prop("replica.lag.time.max.ms")) * time.Millisecond,
		isrKick: make(chan struct{}, 1),

		rackAwareReads: b.cfg.Props["replica.selector.class"] == config.RackAwareReplicaSelector,
	}
	cs.fetchers = replication.NewFetchers(replication.FetcherConfig{
		Self:              b.nodeID,
		ReplicaEpoch:      -1,
		MaxWait:           time.Duration(b.cfg.int64Prop("replica.fetch.wait.max.ms")) * time.Millisecond,
		MinBytes:          int32(b.cfg.int64Prop("replica.fetch.min.bytes")),
		MaxBytes:          int32(b.cfg.int64Prop("replica.fetch.response.max.bytes")),
		PartitionMaxBytes: int32(b.cfg.int64Prop("replica.fetch.max.bytes")),
		Backoff:           time.Duration(b.cfg.int64Prop("replica.fetch.backoff.ms")) * time.Millisecond,
		SocketTimeout:     time.Duration(b.cfg.int64Prop("replica.socket.timeout.ms")) * time.Millisecond,
		Logger:            b.log.With("component", "replica-fetcher"),
		ClientOpts:        b.srv.interOpts,
	})
	b.cluster = cs
	b.acl.Use(node.Collection("acls"))
	b.quotas.Use(node.Collection("quotas"))
	b.cm.Use(node.Collection("client-metrics"))
	b.users.Use(node.Collection("users"))
	b.tokens.Use(node.Collection("delegation-tokens"))
	b.dynConfigs.store.use(node.Collection("broker-configs"))
	b.groupConfigs.use(node.Collection("group-configs"))
	b.features.use(node.Collection("features"))
	b.useLinkStore(link.NewStore(node.Collection("links")))
	b.pids.reserve = func(floor int64) (int64, int64, error) {
		ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
		defer cancel()
		return node.AllocateProducerIDBlock(ctx, floor)
	}
	b.applyMetadata(node.Metadata())
	b.removeStrayClusterDirs()
	b.bg.Add(2)
	go b.metadataLoop()
	go b.isrLoop()
	return nil
}

// stopCluster leaves the cluster: fetchers stop, the registration and any
// controller role are given up so that others take over at once.
func (b *Broker) stopCluster() {
	if b.cluster == nil {
		return
	}
	b.cluster.fetchers.Close()
	b.closePeers()
	if err := b.cluster.node.Close(); err != nil {
		b.log.Warn("leaving the cluster", "err", err)
	}
}

// metadataLoop applies every metadata change.
func (b *Broker) metadataLoop() {
	defer b.bg.Done()
	for {
		ch := b.cluster.node.Changes()
		b.applyMetadata(b.cluster.node.Metadata())
		b.kickLinks()
		select {
		case <-ch:
		case <-b.ctx.Done():
			return
		}
	}
}

// isrLoop proposes ISR changes: periodically for lagging followers, and at
// once when a follower out of the ISR has caught up.
func (b *Broker) isrLoop() {
	defer b.bg.Done()
	tick := time.NewTicker(max(b.cluster.lagMax/2, 50*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		case <-b.cluster.isrKick:
		}
		b.checkISRs()
	}
}

func (b *Broker) kickISR() {
	select {
	case b.cluster.isrKick <- struct{}{}:
	default:
	}
}

func (b *Broker) checkISRs() {
	md := b.cluster.node.Metadata()
	// A broker stopping or with its log dir offline may not rejoin an ISR
	// (KIP-841), as the controller takes them out.
	live := func(id int32) bool {
		br, ok := md.Brokers[id]
		return ok && br.Eligible()
	}
	now := time.Now()
	// Every change proposed at once (a follower back after a restart
	// rejoins the ISR of thousands of partitions): one request to the
	// cluster, written in batches; one log line for those accepted.
	var leaders []*replication.Leader
	var changes []metadata.ISRChange
	for _, p := range b.allPartitions() {
		ldr := p.leader.Load()
		if ldr == nil {
			continue
		}
		change, ok := ldr.CheckISR(now, b.cluster.lagMax, live)
		if !ok {
			continue
		}
		ldr.Proposed(change)
		leaders = append(leaders, ldr)
		changes = append(changes, metadata.ISRChange{Topic: p.topic.name, Partition: p.index,
			LeaderEpoch: change.LeaderEpoch, PartitionEpoch: change.PartitionEpoch, ISR: change.ISR})
	}
	if len(changes) == 0 {
		return
	}
	// The cluster bounds each transaction (AlterPartitions writes 1,000
	// changes to one), not the whole list, which goes on while etcd keeps
	// committing; this only stops a call that never ends.
	ctx, cancel := context.WithTimeout(b.ctx, isrCallTimeout)
	res := b.cluster.node.AlterPartitions(ctx, changes)
	cancel()
	accepted := 0
	type rejection struct {
		n     int
		first metadata.ISRChange
	}
	rejected := map[string]*rejection{} // by error: one log line each
	for i, r := range res {
		c := changes[i]
		if r.Err != nil {
			leaders[i].ProposalFailed()
			rj := rejected[r.Err.Error()]
			if rj == nil {
				rj = &rejection{first: c}
				rejected[r.Err.Error()] = rj
			}
			rj.n++
			continue
		}
		accepted++
		b.log.Debug("ISR changed", "topic", c.Topic, "partition", c.Partition, "isr", c.ISR, "leader_epoch", c.LeaderEpoch)
	}
	if accepted > 0 {
		b.log.Info("ISR changed", "partitions", accepted, "first", changes[0].Topic+"-"+strconv.Itoa(int(changes[0].Partition)), "isr", changes[0].ISR)
	}
	for err, rj := range rejected {
		b.log.Info("ISR change rejected", "partitions", rj.n, "first", rj.first.Topic+"-"+strconv.Itoa(int(rj.first.Partition)), "isr", rj.first.ISR, "err", err)
	}
}

// isrCallTimeout bounds one AlterPartitions call of the ISR loop.
const isrCallTimeout = time.Minute

// applyMetadata makes the local topics, logs and replica roles follow md.
// It runs on the metadata loop, at start and after this broker's own
// metadata writes, one call at a time.
func (b *Broker) applyMetadata(md *metadata.Image) {
	b.cluster.applyMu.Lock()
	defer b.cluster.applyMu.Unlock()
	if prev := b.cluster.applied.Load(); prev != nil && prev.Revision >= md.Revision {
		return
	}
	dynChanged := b.syncDynamicConfigs()
	// Roles read the brokers too (this broker's registration, the
	// leaders' addresses): a change of them applies every topic again.
	prev := b.cluster.applied.Load()
	if prev == nil || !sameBrokers(prev.Brokers, md.Brokers) {
		clear(b.cluster.appliedTopics)
	}
	if b.cluster.appliedTopics == nil {
		b.cluster.appliedTopics = map[string]*metadata.Topic{}
	}
	var rc roleChanges
	var local []*partition
	var applying []*metadata.Topic
	for name, mt := range md.Topics {
		if b.cluster.appliedTopics[name] == mt {
			continue
		}
		delete(b.cluster.appliedTopics, name)
		parts, err := b.applyTopic(md, mt)
		if err != nil {
			b.log.Error("applying topic metadata", "topic", name, "err", err)
		} else {
			applying = append(applying, mt)
		}
		local = append(local, parts...)
	}
	// What opening the logs deferred (a recovery's truncation, rebuilt
	// indexes) is durable before any of them is appended to.
	if err := b.dataDir.Sync(); err != nil {
		b.log.Error("syncing the data directory after opening partitions; not applying their roles", "err", err)
		local, applying = nil, nil
	}
	failed := map[string]bool{} // topics with a role not applied, tried again at the next revision
	for _, p := range local {
		if !b.applyRole(md, p, &rc) {
			failed[p.topic.name] = true
		}
	}
	for _, mt := range applying {
		if !failed[mt.Name] {
			b.cluster.appliedTopics[mt.Name] = mt
		}
	}
	for name := range b.cluster.appliedTopics {
		if md.Topics[name] == nil {
			delete(b.cluster.appliedTopics, name)
		}
	}
	rc.log(b.log, md.Revision)
	if dynChanged {
		b.reapplyTopicDefaults()
	}
	b.mu.RLock()
	var gone []*topic
	for name, t := range b.topics {
		if mt := md.Topics[name]; mt == nil || uuid(mt.ID) != t.id {
			gone = append(gone, t)
		}
	}
	b.mu.RUnlock()
	for _, t := range gone {
		b.dropLocalTopic(t)
	}
	b.cluster.applied.Store(md)
	b.quotas.Records() // enforce a change of the quotas
	b.offsets.sync()   // group coordinator: load and unload (internal_topic.go)
	b.txnLog.sync()    // transaction coordinator
	b.shareLog.sync()  // share coordinator
}

// applyTopic brings one topic's local state in line with the metadata,
// opening the logs of the partitions newly assigned here, and returns the
// partitions with a local log, whose roles the caller applies once what
// opening them deferred is durable.
func (b *Broker) applyTopic(md *metadata.Image, mt *metadata.Topic) ([]*partition, error) {
	b.mu.Lock()
	t := b.topics[mt.Name]
	if t != nil && t.id != uuid(mt.ID) {
		b.mu.Unlock()
		b.dropLocalTopic(t)
		b.mu.Lock()
		t = nil
	}
	configsChanged := t == nil || !mapsEqual(t.configs, mt.Configs)
	if t == nil {
		t = &topic{name: mt.Name, id: uuid(mt.ID)}
		b.putTopicLocked(t)
	}
	if configsChanged {
		t.configs = cloneMap(mt.Configs)
		t.produce = b.produceSettingsFor(t.configs)
	}
	sc := b.storageConfig(t)
	sc.ReplicatedHighWatermark = true
	parts := slices.Clone(t.partitions)
	for len(parts) < len(mt.Partitions) {
		parts = append(parts, nil)
	}
	// The logs to open, several at a time.
	var open []int
	isNew := make([]bool, len(parts))
	for i, mp := range mt.Partitions {
		if p := parts[i]; p == nil || (p.log == nil && slices.Contains(mp.Replicas, b.nodeID)) {
			open = append(open, i)
			isNew[i] = true
		}
	}
	opened := make([]*partition, len(open))
	errs := make([]error, len(open))
	storage.Parallel(len(open), func(k int) {
		i := open[k]
		opened[k], errs[k] = b.newClusterPartition(t, int32(i), slices.Contains(mt.Partitions[i].Replicas, b.nodeID), sc)
	})
	for k, i := range open {
		if errs[k] != nil {
			for _, np := range opened {
				if np != nil && np.log != nil {
					np.log.Close()
				}
			}
			b.mu.Unlock()
			return nil, errs[k]
		}
		parts[i] = opened[k]
	}
	var closeLater []*partition
	for i, mp := range mt.Partitions {
		p := parts[i]
		local := slices.Contains(mp.Replicas, b.nodeID)
		switch {
		case isNew[i]:
		case !local && p.log != nil:
			closeLater = append(closeLater, p)
			parts[i] = &partition{topic: t, index: int32(i)}
			p = parts[i]
		case configsChanged && p.log != nil:
			p.log.UpdateConfig(sc)
		}
		p.meta.Store(&mp)
	}
	t.partitions = parts
	b.mu.Unlock()

	for _, p := range closeLater {
		b.stopReplica(p)
		if err := p.log.Close(); err != nil && !errors.Is(err, storage.ErrLogClosed) {
			b.log.Warn("close reassigned partition", "topic", t.name, "partition", p.index, "err", err)
		}
		b.retirePartitionDir(p)
	}
	var local []*partition
	for _, p := range parts {
		if p.log != nil {
			local = append(local, p)
		}
	}
	return local, nil
}

// newClusterPartition opens (or creates) the local log of a partition
// assigned to this broker; a partition not assigned here gets no log.
// Lock b.mu should be held.
func (b *Broker) newClusterPartition(t *topic, index int32, local bool, sc storage.Config) (*partition, error) {
	p := &partition{topic: t, index: index}
	if !local {
		return p, nil
	}
	name := partitionDirName(t.name, index)
	dir := filepath.Join(b.cfg.DataDir, name)
	absent, _, err := checkPartitionDir(dir)
	if err != nil {
		b.log.Error("cannot open a partition", "topic", t.name, "partition", index, "err", err)
		return nil, err
	}
	// A missing directory gives an unborn log, without a second look.
	open, needMeta := b.dataDir.CreateLog, true
	if !absent {
		open = b.dataDir.OpenLog
		id, err := readPartitionMetadata(dir)
		if err == nil && id != t.id {
			if err := b.strayDir(dir, "it holds topic id "+id.String()+", an earlier topic of the same name"); err != nil {
				return nil, fmt.Errorf("partition %s-%d: %w", t.name, index, err)
			}
		}
		needMeta = err != nil || id != t.id
	}
	l, err := open(name, sc)
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", t.name, index, err)
	}
	if needMeta {
		if err := l.AddFile(partitionMetaName, partitionMetadata(t.id)); err != nil {
			l.Close()
			return nil, err
		}
	}
	p.log = l
	return p, nil
}

// roleChanges counts the roles one applyMetadata changed, for one log line
// instead of one per partition (a failover moves thousands at once).
type roleChanges struct {
	leader, follower int
	first            string // the first partition that changed
}

func (rc *roleChanges) note(p *partition, leader bool) {
	if rc.first == "" {
		rc.first = p.topic.name + "-" + strconv.Itoa(int(p.index))
	}
	if leader {
		rc.leader++
	} else {
		rc.follower++
	}
}

func (rc *roleChanges) log(log *slog.Logger, rev int64) {
	if rc.leader+rc.follower > 0 {
		log.Info("replica roles changed", "became_leader", rc.leader, "became_follower", rc.follower, "first", rc.first, "metadata_revision", rev)
	}
}

// applyRole makes this broker the leader or a follower of p as its
// metadata says; rc counts the changes (the partitions are logged at debug
// level). False when it could not: applyMetadata tries again at the next
// revision.
func (b *Broker) applyRole(md *metadata.Image, p *partition, rc *roleChanges) bool {
	oldEpoch, oldLeader := p.epoch.Load(), p.leader.Load()
	defer func() {
		if p.epoch.Load() != oldEpoch || p.leader.Load() != oldLeader {
			p.roleChanged()
		}
	}()
	mp := p.meta.Load()
	tp := replication.TP{Topic: p.topic.name, Partition: p.index}
	st := replication.State{LeaderEpoch: mp.LeaderEpoch, PartitionEpoch: mp.PartitionEpoch, Replicas: mp.Replicas, ISR: mp.ISR}
	self, registered := md.Brokers[b.nodeID]
	switch {
	case mp.Leader == b.nodeID && (!registered || (mp.LeaderBrokerEpoch != 0 && mp.LeaderBrokerEpoch != self.Epoch)):
		// Elected before this process started (a restart within the old
		// registration's lease): the controller elects anew. Leading in
		// the old epoch now could serve a log that is behind what that
		// epoch acknowledged.
		p.leader.Store(nil)
		p.epoch.Store(mp.LeaderEpoch)
		b.cluster.fetchers.Unfollow(tp)
	case mp.Leader == b.nodeID:
		if ldr := p.leader.Load(); ldr != nil && ldr.LeaderEpoch() == mp.LeaderEpoch {
			ldr.Update(st, time.Now())
			return true
		}
		b.cluster.fetchers.Unfollow(tp) // no fetcher appends once this returns
		leo := p.log.LogEndOffset()
		if err := p.log.AssignLeaderEpoch(mp.LeaderEpoch, leo); err != nil {
			b.log.Error("recording the leader epoch", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
		ldr := replication.NewLeader(b.nodeID, p.log, st, leo, time.Now())
		p.epoch.Store(mp.LeaderEpoch)
		p.leader.Store(ldr)
		ldr.MaybeAdvanceHighWatermark()
		rc.note(p, true)
		b.log.Debug("became leader", "topic", tp.Topic, "partition", tp.Partition, "leader_epoch", mp.LeaderEpoch, "isr", mp.ISR, "log_end_offset", leo, "high_watermark", p.log.HighWatermark())
	case mp.Leader >= 0:
		wasLeader := p.leader.Swap(nil) != nil
		p.epoch.Store(mp.LeaderEpoch)
		lb, ok := md.Brokers[mp.Leader]
		if !ok {
			b.cluster.fetchers.Unfollow(tp) // followed again when the leader registers: a change of the brokers
			return true
		}
		addr := lb.Host + ":" + strconv.Itoa(int(lb.Port))
		if cur, ok := b.cluster.fetchers.Following(tp); ok && cur == mp.Leader && !wasLeader && p.followEpoch.Load() == mp.LeaderEpoch {
			return true
		}
		p.followEpoch.Store(mp.LeaderEpoch)
		if err := b.cluster.fetchers.Follow(tp, p.topic.id, followerLog{p.log, b}, mp.Leader, addr, mp.LeaderEpoch); err != nil {
			b.log.Error("following the leader", "topic", tp.Topic, "partition", tp.Partition, "leader", mp.Leader, "err", err)
			return false
		}
		rc.note(p, false)
		b.log.Debug("became follower", "topic", tp.Topic, "partition", tp.Partition, "leader", mp.Leader, "leader_epoch", mp.LeaderEpoch)
	default:
		p.leader.Store(nil)
		p.epoch.Store(mp.LeaderEpoch)
		b.cluster.fetchers.Unfollow(tp)
	}
	return true
}

// roleChanged tells the fetch sessions that watch p's log that its
// answers changed with this broker's role: NOT_LEADER_OR_FOLLOWER,
// FENCED_LEADER_EPOCH, or a new replication.Leader that is to hear each
// follower's position.
func (p *partition) roleChanged() {
	if p.log != nil {
		p.log.Changed()
	}
}

// stopReplica ends this broker's role for p.
func (b *Broker) stopReplica(p *partition) {
	defer p.roleChanged()
	p.leader.Store(nil)
	if b.cluster != nil {
		b.cluster.fetchers.Unfollow(replication.TP{Topic: p.topic.name, Partition: p.index})
	}
}

// dropLocalTopic forgets a topic the metadata no longer has (or that was
// re-created with a new id) and deletes its local logs.
func (b *Broker) dropLocalTopic(t *topic) {
	b.mu.Lock()
	b.dropTopicLocked(t)
	parts := t.partitions
	b.mu.Unlock()
	for _, p := range parts {
		if p.log == nil {
			continue
		}
		b.stopReplica(p)
		if err := p.log.Close(); err != nil && !errors.Is(err, storage.ErrLogClosed) {
			b.log.Warn("close deleted partition", "topic", t.name, "partition", p.index, "err", err)
		}
		b.retirePartitionDir(p)
	}
	if b.groups != nil {
		b.groups.DeleteTopicOffsets(t.name)
	}
	b.log.Info("deleted topic", "topic", t.name, "id", t.id)
}

// removeStrayClusterDirs renames aside the partition directories that the
// metadata does not assign here (a topic deleted while this broker was
// down, a partition reassigned away; datadir.go).
func (b *Broker) removeStrayClusterDirs() {
	b.mu.RLock()
	keep := map[string]uuid{}
	for _, t := range b.topics {
		for _, p := range t.partitions {
			if p.log != nil {
				keep[partitionDirName(t.name, p.index)] = t.id
			}
		}
	}
	b.mu.RUnlock()
	if err := b.scanDataDir(keep, true); err != nil {
		b.log.Error("scanning the data directory", "err", err)
	}
}

// leadership answers whether this broker may serve p as its leader: 0, or
// NOT_LEADER_OR_FOLLOWER. On a single node it always may.
func (b *Broker) leadership(p *partition) int16 {
	if b.cluster == nil {
		return 0
	}
	if p.log == nil || p.leader.Load() == nil {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// writeLeadership is leadership for a write (WriteTxnMarkers,
// DeleteRecords): a fenced leader, whose session with the metadata quorum
// may have lapsed and whose successor may be elected at any moment (a
// paused process reading a request late, say), takes none.
// NOT_LEADER_OR_FOLLOWER. Produce checks the same in produceLeadership.
func (b *Broker) writeLeadership(p *partition) int16 {
	if code := b.leadership(p); code != 0 {
		return code
	}
	if b.cluster != nil && b.cluster.node.Fenced() {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// servedEpoch is leadership for an answer that names the leaderEpoch
// (ListOffsets): the epoch of the very leadership it checked, from one load
// of p.leader, and 0; or NOT_LEADER_OR_FOLLOWER. Checking p.leader and then
// reading p.epoch will not do: a leader becoming a follower clears p.leader
// and then stores its successor's epoch in p.epoch (applyRole), so the
// answer could pair this broker's leadership with the successor's epoch:
// two leaders in one epoch, as a client (and the Jepsen checker's
// two-leaders) sees it. On a single node, p.epoch.
func (b *Broker) servedEpoch(p *partition) (int32, int16) {
	if b.cluster == nil {
		return p.epoch.Load(), 0
	}
	if p.log == nil {
		return -1, kerr.NotLeaderForPartition.Code
	}
	ldr := p.leader.Load()
	if ldr == nil {
		return -1, kerr.NotLeaderForPartition.Code
	}
	return ldr.LeaderEpoch(), 0
}

// followerLog adapts a storage.Log to replication.FollowerLog; a failed
// append takes the log dir offline (noteWriteError).
type followerLog struct {
	*storage.Log
	b *Broker // comparable: the fetcher compares logs
}

func (f followerLog) AppendAsFollower(records []byte) error {
	_, err := f.Log.AppendAsFollower(records)
	if errors.Is(err, storage.ErrOffsetMismatch) {
		return fmt.Errorf("%w: %w", replication.ErrOffsetMismatch, err)
	}
	if err != nil {
		f.b.noteWriteError(err)
	}
	return err
}

func (f followerLog) MaybeIncrementLogStartOffset(offset int64) error {
	if offset <= f.Log.LogStartOffset() {
		return nil
	}
	_, err := f.Log.DeleteRecordsBefore(offset)
	return err
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// brokerInfo is a broker as Metadata and DescribeCluster list it.
type brokerInfo struct {
	id   int32
	host string
	port int32
	rack *string
}

// brokersView returns the live brokers and the controller: this broker
// alone on a single node.
func (b *Broker) brokersView() ([]brokerInfo, int32) {
	if b.cluster == nil {
		return []brokerInfo{{id: b.nodeID, host: b.srv.advHost, port: b.srv.advPort}}, b.nodeID
	}
	md := b.cluster.node.Metadata()
	out := make([]brokerInfo, 0, len(md.Brokers))
	for _, id := range md.BrokerIDs() {
		br := md.Brokers[id]
		bi := brokerInfo{id: id, host: br.Host, port: br.Port}
		if br.Rack != "" {
			bi.rack = &br.Rack
		}
		out = append(out, bi)
	}
	return out, md.ControllerID
}

// replicaView is a partition's leadership as Metadata lists it.
type replicaView struct {
	leader, leaderEpoch    int32
	replicas, isr, offline []int32
	adding, removing       []int32 // a reassignment in progress
}

// partitionView describes p: this broker as leader, only replica and ISR
// on a single node; the metadata's state in a cluster, with the replicas
// of brokers that are not live as offline.
func (b *Broker) partitionView(p *partition) replicaView {
	if b.cluster == nil {
		return replicaView{leader: b.nodeID, leaderEpoch: p.epoch.Load(), replicas: []int32{b.nodeID}, isr: []int32{b.nodeID}, offline: []int32{}}
	}
	mp := p.meta.Load()
	if mp == nil {
		return replicaView{leader: -1, leaderEpoch: -1, replicas: []int32{}, isr: []int32{}, offline: []int32{}}
	}
	md := b.cluster.node.Metadata()
	v := replicaView{leader: mp.Leader, leaderEpoch: mp.LeaderEpoch, replicas: slices.Clone(mp.Replicas), isr: slices.Clone(mp.ISR), offline: []int32{},
		adding: slices.Clone(mp.AddingReplicas), removing: slices.Clone(mp.RemovingReplicas)}
	for _, r := range mp.Replicas {
		if _, ok := md.Brokers[r]; !ok {
			v.offline = append(v.offline, r)
		}
	}
	return v
}

// fetchLeadership checks a Fetch for p: followers fetch from the leader
// (in its current epoch, when they name one), and so do consumers, except
// that from Fetch v11 any replica may serve a consumer (KIP-392,
// read_replica.go). A follower's fetch offset is its log end offset: the
// Leader records it, which may move the high watermark, and a follower out
// of the ISR that has caught up is proposed for it at once.
func (b *Broker) fetchLeadership(p *partition, req *kmsg.FetchRequest, rp *kmsg.FetchRequestTopicPartition, now time.Time, session replication.FetchClock) int16 {
	if b.cluster != nil && p.log == nil {
		return kerr.NotLeaderForPartition.Code // no replica here
	}
	// As Kafka's Partition.getLocalLog: the client's leader epoch is
	// checked against this replica's before leadership, so a client ahead
	// of this broker's metadata hears UNKNOWN_LEADER_EPOCH (retry here)
	// rather than NOT_LEADER_OR_FOLLOWER (look elsewhere).
	if code := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.epoch.Load()); code != 0 {
		return code
	}
	replica := fetchReplicaID(req)
	if replica < 0 && req.Version >= 11 {
		return 0 // a consumer that any replica may serve; p.log is ours
	}
	if code := b.leadership(p); code != 0 {
		return code
	}
	if b.cluster == nil || replica < 0 {
		return 0
	}
	ldr := p.leader.Load()
	if ldr == nil {
		return kerr.NotLeaderForPartition.Code
	}
	replicaOK, rejoin := ldr.Fetched(replica, rp.FetchOffset, rp.LogStartOffset, now, session)
	if !replicaOK {
		return kerr.NotLeaderForPartition.Code
	}
	if rejoin {
		b.kickISR()
	}
	return 0
}

// awaitMetadata applies the newest metadata until cond holds or timeout
// passes: after a metadata write, so that the writer's next request sees
// its effect here.
func (b *Broker) awaitMetadata(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := b.cluster.node.Changes()
		b.applyMetadata(b.cluster.node.Metadata())
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		case <-b.ctx.Done():
			return false
		}
	}
}

// metadataTimeout bounds how long a metadata write waits to be seen here.
const metadataTimeout = 10 * time.Second

func (b *Broker) clusterCreateTopic(name string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) (*topic, error) {
	if other := b.collidingTopic(name); other != "" {
		return nil, fmt.Errorf("%w %s: topics may not differ only in '.' and '_'", errTopicCollides, other)
	}
	if rf < 0 {
		rf = int16(b.cfg.int64Prop("default.replication.factor"))
	}
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	mt, err := b.cluster.node.CreateTopic(ctx, name, partitions, rf, assignment, cloneMap(configs))
	if errors.Is(err, metadata.ErrTopicExists) {
		return nil, errTopicExists
	}
	if err != nil {
		return nil, err
	}
	var t *topic
	b.awaitMetadata(metadataTimeout, func() bool {
		t = b.lookupTopic(name)
		return t != nil && t.id == uuid(mt.ID)
	})
	if t == nil || t.id != uuid(mt.ID) {
		return nil, fmt.Errorf("topic %s was created but has not reached this broker yet", name)
	}
	b.log.Info("created topic", "topic", name, "id", t.id, "partitions", partitions, "replication_factor", rf, "configs", configs)
	return t, nil
}

func (b *Broker) clusterDeleteTopic(t *topic) error {
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	if err := b.cluster.node.DeleteTopic(ctx, t.name); err != nil && !errors.Is(err, metadata.ErrUnknownTopicOrPartition) {
		return err
	}
	b.awaitMetadata(metadataTimeout, func() bool { return b.lookupTopicID(t.id) == nil })
	return nil
}

func (b *Broker) clusterAddPartitions(t *topic, count int32) error {
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	if err := b.cluster.node.CreatePartitions(ctx, t.name, count, nil); err != nil {
		return err
	}
	b.awaitMetadata(metadataTimeout, func() bool { return int32(len(b.partitionsOf(t))) >= count })
	b.log.Info("added partitions", "topic", t.name, "partitions", count)
	return nil
}

func (b *Broker) clusterSetTopicConfigs(t *topic, configs map[string]string) error {
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	if err := b.cluster.node.SetTopicConfigs(ctx, t.name, cloneMap(configs)); err != nil {
		return err
	}
	b.awaitMetadata(metadataTimeout, func() bool {
		c, _ := b.topicSnapshot(t)
		return mapsEqual(c, configs)
	})
	b.log.Info("altered topic configs", "topic", t.name, "configs", configs)
	return nil
}

// errConfigRejected ends an etcd config update whose change was refused.
var errConfigRejected = errors.New("config change rejected")

// clusterAlterConfigs applies an AlterConfigs or IncrementalAlterConfigs
// change to the topic's overrides as etcd holds them (not this broker's
// copy, which may lag), so a concurrent change through another broker is
// never overwritten.
func (b *Broker) clusterAlterConfigs(t *topic, change func(map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	var rejected *kerr.Error
	var rejectMsg string
	var next map[string]string
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	err := b.cluster.node.UpdateTopicConfigs(ctx, t.name, func(current map[string]string) (map[string]string, error) {
		n, e, msg := change(current)
		if e != nil {
			rejected, rejectMsg = e, msg
			return nil, errConfigRejected
		}
		next = n
		return n, nil
	})
	switch {
	case rejected != nil:
		return rejected, rejectMsg
	case errors.Is(err, metadata.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition, "Topic '" + t.name + "' does not exist."
	case err != nil:
		b.log.Error("alter topic configs", "topic", t.name, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	b.awaitMetadata(metadataTimeout, func() bool {
		c, _ := b.topicSnapshot(t)
		return mapsEqual(c, next)
	})
	b.log.Info("altered topic configs", "topic", t.name, "configs", next)
	return nil, ""
}

// sameBrokers reports whether two images' brokers are the same
// registrations with the same addresses and state.
func sameBrokers(a, b map[int32]metadata.Broker) bool {
	return maps.EqualFunc(a, b, func(x, y metadata.Broker) bool {
		return x.ID == y.ID && x.Host == y.Host && x.Port == y.Port && x.Rack == y.Rack && x.Epoch == y.Epoch &&
			x.LogDirOffline == y.LogDirOffline && x.ControlledShutdown == y.ControlledShutdown &&
			x.SchemaRegistry == y.SchemaRegistry && maps.Equal(x.Listeners, y.Listeners)
	})
}
