package share

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Key names a share-partition: group's share of one partition, the topic
// named by its id. It is the share coordinator's key.
type Key = coordinator.ShareStateKey

// TopicIDPartition is a partition named by its topic's id, as share
// requests name them (Kafka's TopicIdPartition).
type TopicIDPartition struct {
	TopicID   [16]byte
	Partition int32
}

// Persister is the share coordinator as a Cache uses it: where the state
// of every share-partition is kept (Kafka's Persister). Its methods
// answer a kerr code, 0 for success; a Cache passes them on to its
// callers.
type Persister interface {
	// Read returns k's state and whether there is any, recording
	// leaderEpoch (the partition's, on its leader) so that writes of
	// earlier leaders are refused (ReadShareGroupState).
	Read(k Key, leaderEpoch int32) (coordinator.ShareSnapshot, bool, int16)
	// Write stores w as k's state (WriteShareGroupState). It answers
	// FENCED_LEADER_EPOCH when the state was read or written by a later
	// leader and FENCED_STATE_EPOCH when the state was started over in a
	// later state epoch since w's.
	Write(k Key, w coordinator.ShareWrite) int16
	// Delete removes group's states of topic (of every topic when nil)
	// from this broker's share coordinator, which keeps only the
	// share-partitions it coordinates.
	Delete(group string, topic *[16]byte)
}

// Settings gives a Cache the configs it follows. A Cache asks on every
// use, so a changed group config applies at once.
type Settings interface {
	// GroupConfig returns group's value of the group config name (package
	// config's definitions): the group's own, else the broker property
	// that is its default, else Kafka's default.
	GroupConfig(group, name string) string
	// BrokerInt returns the integer broker property name.
	BrokerInt(name string) int64
	// AutoOffsetReset returns group's share.auto.offset.reset: earliest,
	// or by_duration with its duration, or (neither) latest.
	AutoOffsetReset(group string) (earliest, byDuration bool, d time.Duration)
}

// Leader is a partition this broker leads, as a Cache reads it: each
// method is called when the value is needed, so it is current.
type Leader interface {
	// Topic returns the partition's topic name, for logs.
	Topic() string
	// LeaderEpoch returns the partition's current leader epoch.
	LeaderEpoch() int32
	// LogStartOffset returns the log's start offset.
	LogStartOffset() int64
	// HighWatermark returns the log's high watermark.
	HighWatermark() int64
	// OffsetForTimestamp returns the first offset whose record's
	// timestamp is at least ts; ok false when none is.
	OffsetForTimestamp(ts int64) (offset int64, ok bool)
}

// cached is a share-partition of the cache: its state, the leader epoch
// of the partition it was read (or created) in and the state epoch of the
// share coordinator's state. The epochs are guarded by Cache.mu (SetStart
// changes them).
type cached struct {
	sp                      *coordinator.SharePartition
	leaderEpoch, stateEpoch int32
}

// epochs is what a write to the share coordinator carries of a cached
// share-partition.
type epochs struct{ leaderEpoch, stateEpoch int32 }

func (e *cached) epochs() epochs { return epochs{e.leaderEpoch, e.stateEpoch} }

// Cache is a partition leader's share-partitions (Kafka's
// SharePartitionManager's cache), by Key. See the package documentation.
type Cache struct {
	persister Persister
	settings  Settings
	log       *slog.Logger

	mu    sync.Mutex // guards parts and their epochs; a leaf: nothing is called with it held
	parts map[Key]*cached
}

// NewCache returns an empty cache over p, configured by s, logging to log.
func NewCache(p Persister, s Settings, log *slog.Logger) *Cache {
	return &Cache{persister: p, settings: s, log: log, parts: map[Key]*cached{}}
}

// groupInt returns group's integer group config name.
func (c *Cache) groupInt(group, name string) int64 {
	n, _ := strconv.ParseInt(c.settings.GroupConfig(group, name), 10, 64)
	return n
}

// LockDuration returns group's acquisition lock duration
// (share.record.lock.duration.ms).
func (c *Cache) LockDuration(group string) time.Duration {
	return time.Duration(c.groupInt(group, "share.record.lock.duration.ms")) * time.Millisecond
}

// PartitionConfig returns the settings of group's share-partitions, its
// share.record.lock.duration.ms, share.delivery.count.limit and
// share.partition.max.record.locks.
func (c *Cache) PartitionConfig(group string) coordinator.SharePartitionConfig {
	return coordinator.SharePartitionConfig{
		LockDuration:       c.LockDuration(group),
		DeliveryCountLimit: int16(c.groupInt(group, "share.delivery.count.limit")),
		MaxInFlight:        c.groupInt(group, "share.partition.max.record.locks"),
	}
}

// Get returns share-partition k, whose partition p leads: the cached one,
// or else the share coordinator's (read with p's leader epoch), or else
// (create set) a new one at share.auto.offset.reset: p's high watermark
// (latest) or log start offset (earliest). A state cached in an earlier
// leader epoch of p is read again: another leader may have changed it
// since. It answers the share coordinator's error when the state cannot be
// read (nil, code), and nil, 0 when there is none and create is not set.
func (c *Cache) Get(k Key, p Leader, create bool) (*coordinator.SharePartition, int16) {
	cfg := c.PartitionConfig(k.Group)
	epoch := p.LeaderEpoch()
	c.mu.Lock()
	e := c.parts[k]
	var sp *coordinator.SharePartition
	if e != nil && e.leaderEpoch == epoch {
		sp = e.sp
	}
	c.mu.Unlock()
	if sp != nil {
		sp.SetConfig(cfg)
		sp.AdvanceLogStart(p.LogStartOffset())
		return sp, 0
	}
	snap, found, code := c.persister.Read(k, epoch)
	if code != 0 {
		c.log.Warn("reading share-partition state", "group", k.Group, "topic", p.Topic(), "partition", k.Partition, "err", kerr.ErrorForCode(code))
		return nil, code
	}
	if !found && !create {
		return nil, 0
	}
	var fresh *coordinator.SharePartition
	if found {
		fresh = coordinator.RestoreSharePartition(cfg, snap)
	} else {
		start := p.HighWatermark()
		switch earliest, byDuration, d := c.settings.AutoOffsetReset(k.Group); {
		case earliest:
			start = p.LogStartOffset()
		case byDuration: // the first record at most d old, else the end
			if off, ok := p.OffsetForTimestamp(time.Now().Add(-d).UnixMilli()); ok {
				start = off
			}
		}
		fresh = coordinator.NewSharePartition(cfg, start)
	}
	c.mu.Lock()
	if cur := c.parts[k]; cur != nil && cur.leaderEpoch == epoch {
		fresh = cur.sp // read concurrently
	} else {
		c.parts[k] = &cached{sp: fresh, leaderEpoch: epoch, stateEpoch: snap.StateEpoch}
	}
	c.mu.Unlock()
	fresh.AdvanceLogStart(p.LogStartOffset())
	return fresh, 0
}

// Acknowledge applies member's acknowledgement batches to share-partition
// k, whose partition p leads, all or none, and writes the state to the
// share coordinator unless they only renew locks. It answers
// INVALID_RECORD_STATE when k has no state, the batches' error
// (coordinator.SharePartition.Acknowledge), or the share coordinator's.
func (c *Cache) Acknowledge(k Key, p Leader, member string, batches []coordinator.AckBatch, renew bool) int16 {
	sp, code := c.Get(k, p, false)
	if code != 0 {
		return code
	}
	if sp == nil {
		return kerr.InvalidRecordState.Code
	}
	if err := sp.Acknowledge(member, time.Now(), batches, renew); err != nil {
		return err.Code
	}
	if !renew {
		return c.Persist(k, sp)
	}
	return 0
}

// RenewNotEnabled is the message with which Kafka 4.4 refuses (with
// INVALID_RECORD_STATE) a renewal the group does not allow.
const RenewNotEnabled = "Renewing acquisition locks is not enabled for the group."

// RenewAllowed reports whether batches may be applied for group: those
// renewing locks only when its share.renew.acknowledge.enable is true.
func (c *Cache) RenewAllowed(group string, batches []coordinator.AckBatch) bool {
	if strings.EqualFold(c.settings.GroupConfig(group, "share.renew.acknowledge.enable"), "true") {
		return true
	}
	for _, b := range batches {
		if slices.Contains(b.Types, coordinator.AckRenew) {
			return false
		}
	}
	return true
}

// SetStart sets (creating) the share-partition start offset of k to off:
// the state starts over in the next state epoch at the share coordinator.
// p is k's partition when this broker leads it (nil otherwise): its state
// is read first, for the state epoch to bump, and its leader epoch is the
// write's. It answers the share coordinator's error.
func (c *Cache) SetStart(k Key, p Leader, off int64) int16 {
	var epoch int32
	if p != nil {
		epoch = p.LeaderEpoch()
		if _, code := c.Get(k, p, false); code != 0 {
			return code // the state epoch to bump is unknown
		}
	}
	c.mu.Lock()
	e := c.parts[k]
	if e == nil {
		e = &cached{sp: coordinator.NewSharePartition(coordinator.SharePartitionConfig{}, off)}
		c.parts[k] = e
	}
	e.leaderEpoch = epoch
	e.stateEpoch++
	sp, at := e.sp, e.epochs()
	c.mu.Unlock()
	sp.SetStartOffset(off)
	return c.persistAt(k, sp, at)
}

// Persist writes sp, share-partition k, to the share coordinator in the
// leader and state epochs it was cached in. A write fenced by a newer
// leader or state epoch drops k from the cache, to be read again when
// next needed. It answers the share coordinator's error.
func (c *Cache) Persist(k Key, sp *coordinator.SharePartition) int16 {
	c.mu.Lock()
	var at epochs
	if e := c.parts[k]; e != nil {
		at = e.epochs()
	}
	c.mu.Unlock()
	return c.persistAt(k, sp, at)
}

// persistAt writes sp's state in epochs at. A write fenced by a newer
// leader or state epoch drops the cached state, to be read again when
// next needed — unless the cache has moved on since at (a newer write from
// this broker, such as a second InitializeShareGroupState sent while a
// slow first one was still running, fenced this one: the cache holds what
// that newer write stored).
func (c *Cache) persistAt(k Key, sp *coordinator.SharePartition, at epochs) int16 {
	snap := sp.Snapshot()
	code := c.persister.Write(k, coordinator.ShareWrite{StateEpoch: at.stateEpoch, LeaderEpoch: at.leaderEpoch,
		StartOffset: snap.StartOffset, DeliveryCompleteCount: snap.DeliveryCompleteCount, StateBatches: snap.StateBatches})
	if code != 0 {
		c.log.Warn("writing share-partition state failed", "group", k.Group, "partition", k.Partition, "state_epoch", at.stateEpoch, "err", kerr.ErrorForCode(code))
		if code == kerr.FencedLeaderEpoch.Code || code == kerr.FencedStateEpoch.Code {
			c.mu.Lock()
			if e := c.parts[k]; e != nil && e.sp == sp && e.epochs() == at {
				delete(c.parts, k)
			}
			c.mu.Unlock()
		}
	}
	return code
}

// States returns group's cached share-partitions by partition.
func (c *Cache) States(group string) map[TopicIDPartition]*coordinator.SharePartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[TopicIDPartition]*coordinator.SharePartition{}
	for k, e := range c.parts {
		if k.Group == group {
			out[TopicIDPartition{k.TopicID, k.Partition}] = e.sp
		}
	}
	return out
}

// Delete removes group's share-partitions of topic (of every topic when
// nil): the cached ones, and the share coordinator's of the
// share-partitions this broker coordinates (Persister.Delete; a
// cluster's other brokers are asked by the caller).
func (c *Cache) Delete(group string, topic *[16]byte) {
	c.mu.Lock()
	for k := range c.parts {
		if k.Group == group && (topic == nil || k.TopicID == *topic) {
			delete(c.parts, k)
		}
	}
	c.mu.Unlock()
	c.persister.Delete(group, topic)
}

// ReleaseMember makes what member acquired in group on this broker
// available again and writes the share-partitions it changed: its share
// session closed or it left the group.
func (c *Cache) ReleaseMember(group, member string) {
	c.mu.Lock()
	sps := map[Key]*coordinator.SharePartition{}
	for k, e := range c.parts {
		if k.Group == group {
			sps[k] = e.sp
		}
	}
	c.mu.Unlock()
	for k, sp := range sps {
		sp.ReleaseMember(member)
		c.Persist(k, sp)
	}
}
