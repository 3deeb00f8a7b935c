package broker

// OffsetForLeaderEpoch: v2-4 (v0-1 were removed in Kafka 4)
//
// Clients use it (KIP-320) to detect log truncation after a leader change.
// In a cluster the answer comes from the partition's leader-epoch cache,
// only from its leader. A single broker has had one leader epoch per partition, so every batch is
// in the current epoch: a request for that epoch (or an earlier one) ends at
// the log end offset; a later epoch is unknown (-1, -1), as Kafka answers.
// A stale current leader epoch is FENCED_LEADER_EPOCH, a newer one
// UNKNOWN_LEADER_EPOCH.

import (
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 2, 4, (*Broker).handleOffsetForLeaderEpoch) }

func (b *Broker) handleOffsetForLeaderEpoch(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// CLUSTER_ACTION on the cluster (a follower's) allows every topic, else
	// each needs DESCRIBE.
	replica := b.acl.Enabled() && b.allowed(r, acl.ClusterAction, acl.Cluster, acl.ClusterName)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		parts := b.topicPartitions(rt.Topic)
		var denied int16
		if !replica {
			denied = b.topicDenied(r, acl.Describe, rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if denied != 0 {
				sp.ErrorCode = denied
			} else if p := partitionAt(parts, rp.Partition); p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if sp.ErrorCode = b.leadership(p); sp.ErrorCode != 0 {
			} else if sp.ErrorCode = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.epoch.Load()); sp.ErrorCode != 0 {
			} else if b.cluster != nil {
				// Followers truncating after a leader change (KIP-101) and
				// consumers detecting truncation (KIP-320) ask where an
				// epoch ends in the leader's log.
				sp.LeaderEpoch, sp.EndOffset = p.log.EndOffsetForLeaderEpoch(rp.LeaderEpoch)
			} else if epoch := p.epoch.Load(); rp.LeaderEpoch >= 0 && rp.LeaderEpoch <= epoch {
				sp.LeaderEpoch, sp.EndOffset = epoch, p.log.LogEndOffset()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
