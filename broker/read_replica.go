package broker

// Fetch from the closest replica (KIP-392).
//
// In a cluster a consumer's Fetch of version 11 or later (those that carry
// the client's rack) may be served by any replica, not only the leader:
//
//   - A follower answers it from its own log, up to the high watermark it
//     has learnt from its leader's Fetch responses (read_committed: up to
//     its last stable offset, which is bounded by that high watermark),
//     with the same leader epoch checks as the leader (FENCED_LEADER_EPOCH,
//     UNKNOWN_LEADER_EPOCH) and OFFSET_OUT_OF_RANGE outside its log. An
//     offset between its high watermark and its log end offset is answered
//     empty (or waits, as a long poll). A broker holding no replica answers
//     NOT_LEADER_OR_FOLLOWER; a consumer's Fetch below version 11 still
//     needs the leader, as in Kafka.
//   - The leader chooses the replica with replica.selector.class. Unset
//     (Kafka's default), it serves every consumer itself. With Kafka's
//     RackAwareReplicaSelector, a consumer naming a rack (client.rack) that
//     is not the leader's is sent to the follower in that rack that is in
//     the ISR and holds the fetch offset, the most caught-up one if several
//     are (largest log end offset, then the latest caught up); the answer
//     for that partition is PreferredReadReplica with the offsets and no
//     records, at once, without a long poll. With no such follower the
//     leader serves the fetch (PreferredReadReplica -1).
//
// The client then fetches from the preferred replica until its metadata
// ages, or the replica answers an error (OFFSET_OUT_OF_RANGE when it is
// behind the consumer, NOT_LEADER_OR_FOLLOWER when it is no longer a
// replica), when it goes back to the leader, which chooses again: a
// follower that has left the ISR is no longer offered. ListOffsets,
// OffsetForLeaderEpoch and DeleteRecords still need the leader, as in
// Kafka.

import (
	"cmp"
	"slices"

	"github.com/gregor-broker/gregor/replication"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// preferredReadReplica returns the broker that should serve a consumer in
// clientRack fetching p from fetchOffset, -1 for this broker, p's leader.
func (b *Broker) preferredReadReplica(p *partition, clientRack string, fetchOffset int64) int32 {
	if b.cluster == nil || !b.cluster.rackAwareReads || clientRack == "" || clientRack == b.cfg.Props["broker.rack"] {
		return -1
	}
	ldr := p.leader.Load()
	if ldr == nil {
		return -1
	}
	md := b.cluster.node.Metadata()
	var same []replication.ReadReplica
	for _, rr := range ldr.ReadReplicas(fetchOffset) {
		if br, ok := md.Brokers[rr.Replica]; ok && br.Rack == clientRack {
			same = append(same, rr)
		}
	}
	if len(same) == 0 {
		return -1
	}
	best := slices.MaxFunc(same, func(x, y replication.ReadReplica) int {
		switch {
		case x.LogEndOffset != y.LogEndOffset:
			return cmp.Compare(x.LogEndOffset, y.LogEndOffset)
		case !x.LastCaughtUp.Equal(y.LastCaughtUp):
			return x.LastCaughtUp.Compare(y.LastCaughtUp)
		default:
			return int(y.Replica - x.Replica) // the lower id, to be deterministic
		}
	})
	return best.Replica
}

// fetchStamp is the fetch sessions' Cache.Stamp, what an answer depends on
// besides the logs: the ACLs' revision, so that an idle partition of a
// topic a consumer may no longer read is answered
// TOPIC_AUTHORIZATION_FAILED at its next fetch (Kafka authorizes every
// partition of a session on each request); and, for a consumer a
// rack-aware leader may send to a follower, a new stamp every time, as its
// preferred read replica follows the followers' progress, which no log
// change reports (Kafka's cost for every session).
func (b *Broker) fetchStamp(req *kmsg.FetchRequest) int64 {
	if fetchReplicaID(req) < 0 && req.Rack != "" && b.cluster != nil && b.cluster.rackAwareReads && req.Rack != b.cfg.Props["broker.rack"] {
		return -b.fetchStamps.Add(1)
	}
	if !b.acl.Enabled() {
		return 0
	}
	return b.acl.Revision()
}
