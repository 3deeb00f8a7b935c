package broker

// __share_group_state: the share coordinator's replicated log (KIP-932).
//
// Created on first use (the first read or write of share-partition state,
// or a FindCoordinator with key type 2), on a single node too, with
// share.coordinator.state.topic.num.partitions partitions,
// share.coordinator.state.topic.replication.factor replicas and
// share.coordinator.state.topic.min.isr, both capped at the live brokers;
// internal and compacted, with retention -1 like __consumer_offsets.
//
// Share-partition (group, topic id, partition) is coordinated by the leader
// of partition coordinator.PartitionFor("group:topicId:partition",
// partitions). When this broker becomes leader of a partition the share
// coordinator (coordinator/sharecoord.go) loads it, and unloads it when it
// stops leading. Every record is appended and waits for the high
// watermark with min.isr, as an acks=all produce does.
//
// The partition leaders (package share's Cache, shares.go) are the share
// coordinator's clients through sharePersister, their share.Persister:
// ReadShareGroupState when they first need a share-partition's state (a
// new leader too), WriteShareGroupState after every acknowledgement,
// release and SPSO change, answered here when this broker is the
// coordinator and sent to it otherwise (84_share_group_state_rw.go).

import (
	"context"
	"errors"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const shareStateTopicName = "__share_group_state"

func (b *Broker) openShareCoordinator() *coordinator.ShareCoordinator {
	return coordinator.NewShareCoordinator(coordinator.ShareCoordinatorConfig{
		Log:                   groupLog{b: b, topic: shareStateTopicName, minISR: b.shareLog.minISR},
		LogPartitions:         int32(b.cfg.int64Prop("share.coordinator.state.topic.num.partitions")),
		SnapshotUpdateRecords: int(b.cfg.int64Prop("share.coordinator.snapshot.update.records.per.snapshot")),
		Now:                   b.cfg.Now,
	})
}

// shareInternalTopic describes __share_group_state.
func (b *Broker) shareInternalTopic() *internalTopic {
	return &internalTopic{
		b:              b,
		name:           shareStateTopicName,
		partitionsKey:  "share.coordinator.state.topic.num.partitions",
		replicationKey: "share.coordinator.state.topic.replication.factor",
		minISRKey:      "share.coordinator.state.topic.min.isr",
		coordinator:    "share coordinator",
		coord: func() partitionLoader {
			if b.shareCoord == nil {
				return nil
			}
			return b.shareCoord
		},
	}
}

// shareCoordinator returns the broker coordinating share-partition key
// ("group:topicId:partition"): the leader of its partition of
// __share_group_state.
func (b *Broker) shareCoordinator(key string) (brokerInfo, int16) {
	return b.keyCoordinator(b.shareLog.ensure(), key)
}

// shareCoordinatorCode is what a request for share-partition k gets here.
func (b *Broker) shareCoordinatorCode(k coordinator.ShareStateKey) int16 {
	return b.keyCoordinatorCode(b.shareLog.ensure(), k.CoordinatorKey(), b.shareCoord.KeyCodeOf)
}

// shareStateRetryable reports the codes after which a leader looks the
// share coordinator up again and retries.
func shareStateRetryable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code, kerr.RequestTimedOut.Code:
		return true
	}
	return false
}

// callShareCoordinator runs one share-partition state request for k at its
// share coordinator: local runs it here, remote sends it to broker id.
// It retries retryable failures (the coordinator moving or loading)
// until shareStateTimeout.
func (b *Broker) callShareCoordinator(k coordinator.ShareStateKey, local func() int16, remote func(ctx context.Context, id int32) (int16, error)) int16 {
	ctx, cancel := context.WithTimeout(b.ctx, shareStateTimeout)
	defer cancel()
	var code int16
	for attempt := 0; ; attempt++ {
		c, ccode := b.shareCoordinator(k.CoordinatorKey())
		switch {
		case ccode != 0:
			code = ccode
		case c.id == b.nodeID:
			if code = b.shareCoordinatorCode(k); code == 0 {
				code = local()
			}
		default:
			var err error
			code, err = remote(ctx, c.id)
			if err != nil {
				b.log.Debug("share coordinator request failed", "coordinator", c.id, "err", err)
				code = kerr.CoordinatorNotAvailable.Code
				var ke *kerr.Error
				if errors.As(err, &ke) {
					code = ke.Code
				}
			}
		}
		if !shareStateRetryable(code) {
			return code
		}
		select {
		case <-ctx.Done():
			return code
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, 500*time.Millisecond)):
		}
	}
}

// sharePersister is the share coordinator as package share reads and
// writes it: share-partition state requests to the coordinator of each
// key, here or on another broker (callShareCoordinator).
type sharePersister struct{ b *Broker }

// Read reads share-partition k's state from its share coordinator,
// recording leaderEpoch there.
func (pr sharePersister) Read(k coordinator.ShareStateKey, leaderEpoch int32) (snap coordinator.ShareSnapshot, found bool, code int16) {
	b := pr.b
	code = b.callShareCoordinator(k, func() int16 {
		var c int16
		snap, found, c = b.shareCoord.Read(k, leaderEpoch)
		return c
	}, func(ctx context.Context, id int32) (int16, error) {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.Group
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = k.TopicID
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := b.peerRequest(ctx, id, req)
		if err != nil {
			return 0, err
		}
		resp := kresp.(*kmsg.ReadShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, errors.New("ReadShareGroupState: unexpected response")
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return p.ErrorCode, nil
		}
		found = p.StartOffset >= 0
		snap = coordinator.ShareSnapshot{StateEpoch: p.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: -1}
		for _, sb := range p.StateBatches {
			snap.StateBatches = append(snap.StateBatches, coordinator.ShareStateBatch{FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
				DeliveryState: sb.DeliveryState, DeliveryCount: sb.DeliveryCount})
		}
		return 0, nil
	})
	return snap, found, code
}

// Write writes share-partition k's state to its share coordinator.
func (pr sharePersister) Write(k coordinator.ShareStateKey, w coordinator.ShareWrite) int16 {
	b := pr.b
	return b.callShareCoordinator(k, func() int16 {
		return b.shareCoord.Write(k, w)
	}, func(ctx context.Context, id int32) (int16, error) {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1
		req.GroupID = k.Group
		rt := kmsg.NewWriteShareGroupStateRequestTopic()
		rt.TopicID = k.TopicID
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = k.Partition, w.StateEpoch, w.LeaderEpoch, w.StartOffset, w.DeliveryCompleteCount
		for _, sb := range w.StateBatches {
			rb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			rb.FirstOffset, rb.LastOffset, rb.DeliveryState, rb.DeliveryCount = sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount
			rp.StateBatches = append(rp.StateBatches, rb)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := b.peerRequest(ctx, id, req)
		if err != nil {
			return 0, err
		}
		resp := kresp.(*kmsg.WriteShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, errors.New("WriteShareGroupState: unexpected response")
		}
		return resp.Topics[0].Partitions[0].ErrorCode, nil
	})
}

// Delete deletes, from the share coordinator on this broker, group's
// share-partition state of the keys it serves (of topic, or all when
// nil). Every broker does it for a deleted group (DeleteShareGroupState),
// so every share coordinator does.
func (pr sharePersister) Delete(group string, topic *[16]byte) {
	b := pr.b
	for _, k := range b.shareCoord.KeysOf(group, topic) {
		if code := b.shareCoord.Delete(k); code != 0 {
			b.log.Warn("deleting share-partition state", "group", group, "partition", k.Partition, "err", kerr.ErrorForCode(code))
		}
	}
}
