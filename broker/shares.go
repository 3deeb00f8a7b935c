package broker

// Share groups on the partition leader (KIP-932). Package share keeps the
// share-partitions this broker leads (b.shares, a share.Cache; the state
// machine is coordinator.SharePartition) and the share sessions of
// ShareFetch and ShareAcknowledge (b.shareSessions). The broker gives it
// what the broker owns: the share coordinator as its Persister
// (sharePersister, share_state_topic.go: __share_group_state, here or on
// the broker that coordinates the share-partition), the group configs
// and broker properties as its Settings (shareSettings), and each led
// partition as a Leader (shareLeader). The wire stays here: ShareFetch
// (78_share_fetch.go, which also reads the log and acquires records),
// ShareAcknowledge (79) and the inter-broker share state requests by
// which the group coordinator reaches the leaders' state
// (83_share_group_state.go) for the offset admin APIs (90-92) and group
// deletion. The leader needs nothing else from the group coordinator:
// ShareFetch does not check membership, and a member that left or was
// fenced on the coordinator keeps its acquired records on the leaders
// until their locks expire (share.record.lock.duration.ms) or its share
// session closes; on a single node they are released at once
// (OnShareMemberLeave: Sessions.MemberLeft).

import (
	"context"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/share"
)

// topicIDPartition is a partition named by its topic's id.
type topicIDPartition = share.TopicIDPartition

// shareSettings are the configs package share follows: the group configs
// (groupconfigs.go) and the broker properties.
type shareSettings struct{ b *Broker }

func (s shareSettings) GroupConfig(group, name string) string {
	if d := config.Group(name); d != nil && d.MaxProp != "" {
		return strconv.FormatInt(s.b.groupConfigInt(group, name), 10)
	}
	v, _ := s.b.groupConfigValue(group, name)
	return v
}

func (s shareSettings) BrokerInt(name string) int64 { return s.b.cfg.int64Prop(name) }

func (s shareSettings) AutoOffsetReset(group string) (earliest, byDuration bool, d time.Duration) {
	v, _ := s.b.groupConfigValue(group, "share.auto.offset.reset")
	earliest, byDuration, d, _ = config.ShareAutoOffsetReset(v)
	return earliest, byDuration, d
}

// shareLeader is a partition this broker leads, as package share reads
// it.
type shareLeader struct{ p *partition }

func (l shareLeader) Topic() string         { return l.p.topic.name }
func (l shareLeader) LeaderEpoch() int32    { return l.p.epoch.Load() }
func (l shareLeader) LogStartOffset() int64 { return l.p.log.LogStartOffset() }
func (l shareLeader) HighWatermark() int64  { return l.p.log.HighWatermark() }

// OffsetForTimestamp is ListOffsets by timestamp: below the high watermark.
func (l shareLeader) OffsetForTimestamp(ts int64) (int64, bool) {
	off, _, ok := l.p.log.OffsetForTimestamp(ts)
	if !ok || off >= l.p.log.HighWatermark() {
		return 0, false
	}
	return off, true
}

// shareOwner is the owner of the share sessions r opens: its connection,
// whose end closes them (share.Sessions.Close), or none for a request on
// no connection (Execute).
func (r *request) shareOwner() any {
	if r.conn == nil {
		return nil
	}
	return r.conn
}

// shareKeyOf is group's share-partition of p.
func shareKeyOf(group string, p *partition) share.Key {
	return share.Key{Group: group, TopicID: p.topic.id, Partition: p.index}
}

// sharePartition returns group's share-partition of p, which this broker
// leads (share.Cache.Get).
func (b *Broker) sharePartition(group string, p *partition, create bool) (*coordinator.SharePartition, int16) {
	return b.shares.Get(shareKeyOf(group, p), shareLeader{p}, create)
}

// setShareStart sets (creating) the SPSO of group on topic/partition
// (share.Cache.SetStart).
func (b *Broker) setShareStart(group string, t uuid, partition int32, off int64) int16 {
	var leader share.Leader
	if tp := b.lookupTopicID(t); tp != nil {
		if p := partitionAt(b.partitionsOf(tp), partition); p != nil {
			leader = shareLeader{p}
		}
	}
	return b.shares.SetStart(share.Key{Group: group, TopicID: t, Partition: partition}, leader, off)
}

// deleteShareStates removes group's share-partition state of topic t:
// this leader's, and the share coordinator's of the share-partitions it
// serves (every broker is asked in a cluster:
// deleteShareStatesEverywhere).
func (b *Broker) deleteShareStates(group string, t uuid) {
	id := [16]byte(t)
	b.shares.Delete(group, &id)
}

// onShareGroupDeleted is the coordinator's OnShareGroupDeleted: the
// group's share-partitions and sessions go here, and its configs. In a
// cluster the leaders hold the group's share-partition state: they are
// asked to delete it in the background (the coordinator's lock is held
// here).
func (b *Broker) onShareGroupDeleted(group string) {
	b.shareSessions.GroupDeleted(group)
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
}
