package broker

// Share groups on the partition leader (KIP-932): the share-partition
// state of each (group, partition) this broker leads (the state machine is
// coordinator.SharePartition), the share sessions of ShareFetch and
// ShareAcknowledge, and the group configs (resource type GROUP of
// DescribeConfigs and IncrementalAlterConfigs) that tune them.
//
// Share-partition state is written to the share coordinator
// (share_state_topic.go: __share_group_state, replicated) after every
// acknowledgement, release and SPSO change, and read from it when a leader
// first needs it (a new leader of the partition too, or this one in a new
// leader epoch): acknowledged records are not delivered again after a
// restart or a leader change, and records acquired but not acknowledged
// are delivered again with their delivery count. Only a share-partition
// the share coordinator has no state of starts at share.auto.offset.reset.
// The leader caches the state it works on (parts); the group coordinator
// reaches it with the inter-broker share state requests
// (83_share_group_state.go) for the offset admin APIs (90-92) and group
// deletion. The leader needs nothing else from the group coordinator: ShareFetch
// does not check membership, and a member that left or was fenced on the
// coordinator keeps its acquired records on the leaders until their locks
// expire (share.record.lock.duration.ms) or its share session closes; on a
// single node they are released at once (onShareMemberLeave).
//
// Group configs are cluster metadata, a configMaps collection: etcd's
// /gregor/group-configs/<group> in a cluster (in every broker's snapshot),
// __meta/group-configs.json on a single node.

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

type shareKey struct {
	group     string
	topic     uuid
	partition int32
}

type shareSessionKey struct{ group, member string }

type topicIDPartition struct {
	topic     uuid
	partition int32
}

// shareSession is one member's share session on this broker: the
// partitions it fetches and the epoch its next request must carry.
type shareSession struct {
	epoch int32
	parts []topicIDPartition // in the order added
	owner *conn              // the connection that opened it (nil: none)
}

func (s *shareSession) add(tp topicIDPartition) {
	if !slices.Contains(s.parts, tp) {
		s.parts = append(s.parts, tp)
	}
}

func (s *shareSession) forget(tp topicIDPartition) {
	s.parts = slices.DeleteFunc(s.parts, func(x topicIDPartition) bool { return x == tp })
}

// shareMeta is what a leader knows of a cached share-partition: the
// leader epoch of the partition it was read (or created) in and the state
// epoch of the share coordinator's state.
type shareMeta struct {
	leaderEpoch, stateEpoch int32
}

type shareState struct {
	mu       sync.Mutex
	parts    map[shareKey]*coordinator.SharePartition
	meta     map[shareKey]shareMeta
	sessions map[shareSessionKey]*shareSession
}

func (s *shareState) init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts == nil {
		s.parts = map[shareKey]*coordinator.SharePartition{}
		s.meta = map[shareKey]shareMeta{}
		s.sessions = map[shareSessionKey]*shareSession{}
	}
}

// groupConfigValue returns a group config's value and whether the group
// sets it.
func (b *Broker) groupConfigValue(group, name string) (string, bool) {
	if v, ok := b.groupConfigs.of(group)[name]; ok {
		return v, true
	}
	d := config.Group(name)
	if d == nil {
		return "", false
	}
	if d.BrokerProp != "" {
		return b.cfg.stringProp(d.BrokerProp), false
	}
	return d.Default, false
}

func (b *Broker) groupConfigInt(group, name string) int64 {
	v, _ := b.groupConfigValue(group, name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// initGroupConfigs opens a single node's group configs; a cluster's are
// its collection, once joined (startCluster).
func (b *Broker) initGroupConfigs() error {
	if b.cfg.clusterConfigured() {
		return nil
	}
	f, err := b.openObjectFile(groupConfigsFileName, "groups")
	if err != nil {
		return err
	}
	b.groupConfigs.use(f)
	return nil
}

// groupConfigsFileName is the single node's group config store under
// __meta.
const groupConfigsFileName = "group-configs.json"

// updateGroupConfigs replaces a group's configs by what change makes of
// the current ones (a copy the change may modify; empty removes them),
// conditioned on them, so a concurrent change through another broker is
// not lost; the change is visible here when this returns.
func (b *Broker) updateGroupConfigs(group string, change func(cur map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	var rejected *kerr.Error
	var rejectMsg string
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	_, err := b.groupConfigs.modify(ctx, group, func(cur map[string]string) (map[string]string, error) {
		next, e, msg := change(cur)
		if e != nil {
			rejected, rejectMsg = e, msg
			return nil, errConfigRejected
		}
		return next, nil
	})
	if rejected != nil {
		return rejected, rejectMsg
	}
	if err != nil {
		b.log.Error("alter group configs", "group", group, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}

// dropGroupConfigs removes a deleted group's configs, in the background:
// it runs under the group coordinator's lock. Only the configs seen now
// are removed, never a newer setting.
func (b *Broker) dropGroupConfigs(group string) {
	seen := b.groupConfigs.of(group)
	if seen == nil {
		return
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
		defer cancel()
		_, err := b.groupConfigs.modify(ctx, group, func(cur map[string]string) (map[string]string, error) {
			if !maps.Equal(cur, seen) {
				return cur, nil
			}
			return nil, nil
		})
		if err != nil {
			b.log.Warn("deleting a deleted group's configs", "group", group, "err", err)
		}
	}()
}

// shareTimeouts gives the coordinator a group's session timeout and
// heartbeat interval.
func (b *Broker) shareTimeouts(group string) (time.Duration, time.Duration) {
	return time.Duration(b.groupConfigInt(group, "share.session.timeout.ms")) * time.Millisecond,
		time.Duration(b.groupConfigInt(group, "share.heartbeat.interval.ms")) * time.Millisecond
}

func (b *Broker) sharePartitionConfig(group string) coordinator.SharePartitionConfig {
	maxLocks := b.cfg.int64Prop("group.share.partition.max.record.locks")
	return coordinator.SharePartitionConfig{
		LockDuration:       time.Duration(b.groupConfigInt(group, "share.record.lock.duration.ms")) * time.Millisecond,
		DeliveryCountLimit: int16(b.groupConfigInt(group, "share.delivery.count.limit")),
		MaxInFlight:        maxLocks,
	}
}

// sharePartition returns the share-partition state of group on p: this
// leader's, or else the share coordinator's (ReadShareGroupState, which
// records this leader's epoch there), or else (create set) a new one at
// share.auto.offset.reset. A state cached in an earlier leader epoch of p
// is read again: another leader may have changed it since. It answers the
// share coordinator's error when it cannot be read (nil, code).
func (b *Broker) sharePartition(group string, p *partition, create bool) (*coordinator.SharePartition, int16) {
	key := shareKey{group, p.topic.id, p.index}
	cfg := b.sharePartitionConfig(group)
	epoch := p.epoch.Load()
	b.shares.mu.Lock()
	sp, meta := b.shares.parts[key], b.shares.meta[key]
	b.shares.mu.Unlock()
	if sp != nil && meta.leaderEpoch == epoch {
		sp.SetConfig(cfg)
		sp.AdvanceLogStart(p.log.LogStartOffset())
		return sp, 0
	}
	k := coordinator.ShareStateKey{Group: group, TopicID: p.topic.id, Partition: p.index}
	snap, found, code := b.readShareState(k, epoch)
	if code != 0 {
		b.log.Warn("reading share-partition state", "group", group, "topic", p.topic.name, "partition", p.index, "err", kerr.ErrorForCode(code))
		return nil, code
	}
	if !found && !create {
		return nil, 0
	}
	var fresh *coordinator.SharePartition
	if found {
		fresh = coordinator.RestoreSharePartition(cfg, snap)
	} else {
		start := p.log.HighWatermark()
		if v, _ := b.groupConfigValue(group, "share.auto.offset.reset"); v == "earliest" {
			start = p.log.LogStartOffset()
		}
		fresh = coordinator.NewSharePartition(cfg, start)
	}
	b.shares.mu.Lock()
	if cur := b.shares.parts[key]; cur != nil && b.shares.meta[key].leaderEpoch == epoch {
		fresh = cur // read concurrently
	} else {
		b.shares.parts[key] = fresh
		b.shares.meta[key] = shareMeta{leaderEpoch: epoch, stateEpoch: snap.StateEpoch}
	}
	b.shares.mu.Unlock()
	fresh.AdvanceLogStart(p.log.LogStartOffset())
	return fresh, 0
}

// setShareStart sets (creating) the SPSO of group on topic/partition: the
// state starts over in a new state epoch at the share coordinator.
func (b *Broker) setShareStart(group string, t uuid, partition int32, off int64) int16 {
	key := shareKey{group, t, partition}
	var epoch int32
	if tp := b.lookupTopicID(t); tp != nil {
		if p := partitionAt(b.partitionsOf(tp), partition); p != nil {
			epoch = p.epoch.Load()
			if _, code := b.sharePartition(group, p, false); code != 0 {
				return code // the state epoch to bump is unknown
			}
		}
	}
	b.shares.mu.Lock()
	sp := b.shares.parts[key]
	if sp == nil {
		sp = coordinator.NewSharePartition(coordinator.SharePartitionConfig{}, off)
		b.shares.parts[key] = sp
	}
	meta := b.shares.meta[key]
	meta.leaderEpoch = epoch
	meta.stateEpoch++
	b.shares.meta[key] = meta
	b.shares.mu.Unlock()
	sp.SetStartOffset(off)
	return b.persistSharePartitionAt(group, t, partition, sp, meta)
}

// persistSharePartition writes sp's state to the share coordinator
// (WriteShareGroupState), in the leader and state epochs it was read in.
func (b *Broker) persistSharePartition(group string, t uuid, partition int32, sp *coordinator.SharePartition) int16 {
	b.shares.mu.Lock()
	meta := b.shares.meta[shareKey{group, t, partition}]
	b.shares.mu.Unlock()
	return b.persistSharePartitionAt(group, t, partition, sp, meta)
}

// persistSharePartitionAt writes sp's state in the epochs of meta. A write
// fenced by a newer leader or state epoch drops the cached state, to be
// read again when next needed — unless the cache has moved on since meta
// (a newer write from this broker, such as a second InitializeShareGroupState
// sent while a slow first one was still running, fenced this one: the
// cache holds what that newer write stored).
func (b *Broker) persistSharePartitionAt(group string, t uuid, partition int32, sp *coordinator.SharePartition, meta shareMeta) int16 {
	key := shareKey{group, t, partition}
	snap := sp.Snapshot()
	k := coordinator.ShareStateKey{Group: group, TopicID: t, Partition: partition}
	code := b.writeShareState(k, coordinator.ShareWrite{StateEpoch: meta.stateEpoch, LeaderEpoch: meta.leaderEpoch,
		StartOffset: snap.StartOffset, DeliveryCompleteCount: snap.DeliveryCompleteCount, StateBatches: snap.StateBatches})
	if code != 0 {
		b.log.Warn("writing share-partition state failed", "group", group, "partition", partition, "state_epoch", meta.stateEpoch, "err", kerr.ErrorForCode(code))
		if code == kerr.FencedLeaderEpoch.Code || code == kerr.FencedStateEpoch.Code {
			b.shares.mu.Lock()
			if b.shares.parts[key] == sp && b.shares.meta[key] == meta {
				delete(b.shares.parts, key)
				delete(b.shares.meta, key)
			}
			b.shares.mu.Unlock()
		}
	}
	return code
}

// shareStates returns group's share partitions by topic id and partition.
func (b *Broker) shareStates(group string) map[topicIDPartition]*coordinator.SharePartition {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	out := map[topicIDPartition]*coordinator.SharePartition{}
	for k, sp := range b.shares.parts {
		if k.group == group {
			out[topicIDPartition{k.topic, k.partition}] = sp
		}
	}
	return out
}

// deleteShareStates removes group's share-partition state, of one topic or
// (zero id) all: this leader's, and the share coordinator's of the
// share-partitions it serves (every broker is asked in a cluster:
// deleteShareStatesEverywhere).
func (b *Broker) deleteShareStates(group string, t uuid) {
	b.shares.mu.Lock()
	for k := range b.shares.parts {
		if k.group == group && (t == uuid{} || k.topic == t) {
			delete(b.shares.parts, k)
			delete(b.shares.meta, k)
		}
	}
	b.shares.mu.Unlock()
	var topic *[16]byte
	if t != (uuid{}) {
		topic = (*[16]byte)(&t)
	}
	b.deleteLocalShareStates(group, topic)
}

// releaseShareMember releases what member acquired in group on this broker
// and drops its share session: its session closed or it left the group.
func (b *Broker) releaseShareMember(group, member string) {
	b.shares.mu.Lock()
	sps := map[shareKey]*coordinator.SharePartition{}
	for k, sp := range b.shares.parts {
		if k.group == group {
			sps[k] = sp
		}
	}
	b.shares.mu.Unlock()
	for k, sp := range sps {
		sp.ReleaseMember(member)
		b.persistSharePartition(k.group, k.topic, k.partition, sp)
	}
}

// closeShareSessions closes the share sessions opened on c, which has
// closed, and releases what their members acquired on this broker, as
// Kafka does when a share consumer's connection drops (KAFKA-19015). A
// session that the member has since reopened on another connection is
// not c's any more and stays.
func (b *Broker) closeShareSessions(c *conn) {
	b.shares.mu.Lock()
	if len(c.shareKeys) == 0 {
		b.shares.mu.Unlock()
		return
	}
	var gone []shareSessionKey
	for _, key := range c.shareKeys {
		if s := b.shares.sessions[key]; s != nil && s.owner == c {
			delete(b.shares.sessions, key)
			gone = append(gone, key)
		}
	}
	c.shareKeys = nil
	b.shares.mu.Unlock()
	for _, key := range gone {
		b.releaseShareMember(key.group, key.member)
	}
}

// onShareMemberLeave is the coordinator's OnShareMemberLeave.
func (b *Broker) onShareMemberLeave(group, member string) {
	b.releaseShareMember(group, member)
	b.shares.mu.Lock()
	delete(b.shares.sessions, shareSessionKey{group, member})
	b.shares.mu.Unlock()
}

// onShareGroupDeleted is the coordinator's OnShareGroupDeleted. In a
// cluster the leaders hold the group's share-partition state: they are
// asked to delete it in the background (the coordinator's lock is held
// here).
func (b *Broker) onShareGroupDeleted(group string) {
	b.deleteShareStates(group, uuid{})
	if b.cluster != nil {
		go func() {
			ctx, cancel := context.WithTimeout(b.ctx, shareStateTimeout)
			defer cancel()
			if err := b.deleteShareStatesEverywhere(ctx, group, nil); err != nil {
				b.log.Warn("deleting a deleted share group's state on the brokers", "group", group, "err", err)
			}
		}()
	}
	b.dropGroupConfigs(group)
	b.shares.mu.Lock()
	for k := range b.shares.sessions {
		if k.group == group {
			delete(b.shares.sessions, k)
		}
	}
	b.shares.mu.Unlock()
}
