package broker

// The classic group APIs are answered by package coordinator; this file
// registers their versions, with the notes on what each version changes,
// and passes the decoded request through.
//
// JoinGroup and SyncGroup block while the group rebalances, so they are
// registered with runAsync: unlike other requests, which run in order on the
// connection's reader, each runs in a goroutine of its own and ends when the
// rebalance does or the connection closes (its context is the
// connection's). Responses are still written in request order.

import (
	"net"

	"github.com/gregor-broker/gregor/coordinator"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	// JoinGroup: v0-9. v1 adds the rebalance timeout (v0 uses the session
	// timeout for it), v4 makes a first join without member id answer
	// MEMBER_ID_REQUIRED with a generated id, v5 adds group.instance.id
	// (static membership), v6 is flexible, v7 returns the protocol type and a
	// nullable protocol name, v8 adds a reason, v9 adds SkipAssignment, which
	// the coordinator never sets.
	register(kmsg.JoinGroup, 0, 9, func(b *Broker, r *request) (kmsg.Response, error) {
		clientID, host := r.memberClient()
		return b.groups.JoinGroup(r.ctx, r.msg.(*kmsg.JoinGroupRequest), clientID, host), nil
	})
	// SyncGroup: v0-5. v3 instance id, v4 flexible, v5 protocol type and
	// name, checked against the group's (INCONSISTENT_GROUP_PROTOCOL).
	register(kmsg.SyncGroup, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.SyncGroup(r.ctx, r.msg.(*kmsg.SyncGroupRequest)), nil
	})
	// Heartbeat: v0-4. v3 instance id, v4 flexible.
	register(kmsg.Heartbeat, 0, 4, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.Heartbeat(r.msg.(*kmsg.HeartbeatRequest)), nil
	})
	// LeaveGroup: v0-5. v3 batches members, each answered on its own; v5
	// reason.
	register(kmsg.LeaveGroup, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.LeaveGroup(r.msg.(*kmsg.LeaveGroupRequest)), nil
	})
	// OffsetCommit: v2-9 (v0-1 were removed in Kafka 4). v2-4 carry a
	// retention time, ignored (retention is offsets.retention.minutes after
	// the group empties, as since KIP-211); v6 leader epochs, v7
	// group.instance.id, v8 flexible, v9 answers GROUP_ID_NOT_FOUND instead
	// of ILLEGAL_GENERATION for a member commit to a group that does not
	// exist.
	register(kmsg.OffsetCommit, 2, 9, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.OffsetCommit(r.msg.(*kmsg.OffsetCommitRequest)), nil
	})
	// OffsetFetch: v1-9 (v0 read ZooKeeper offsets and was removed in Kafka
	// 4). v2 adds a top-level error and null topics (all committed offsets),
	// v5 leader epochs, v7 require_stable, v8 batches groups, v9 member id
	// and epoch, checked for KIP-848 groups (STALE_MEMBER_EPOCH).
	register(kmsg.OffsetFetch, 1, 9, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.OffsetFetch(r.msg.(*kmsg.OffsetFetchRequest)), nil
	})
	// OffsetDelete: v0.
	register(kmsg.OffsetDelete, 0, 0, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.OffsetDelete(r.msg.(*kmsg.OffsetDeleteRequest)), nil
	})
	// DescribeGroups: v0-6. v3 authorized operations, v4 instance ids, v5
	// flexible, v6 GROUP_ID_NOT_FOUND and an error message for unknown
	// groups.
	register(kmsg.DescribeGroups, 0, 6, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.DescribeGroups(r.msg.(*kmsg.DescribeGroupsRequest)), nil
	})
	// ListGroups: v0-5. v4 states filter, v5 types filter ("classic" or
	// "consumer", KIP-1043).
	register(kmsg.ListGroups, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.ListGroups(r.msg.(*kmsg.ListGroupsRequest)), nil
	})
	// DeleteGroups: v0-2.
	register(kmsg.DeleteGroups, 0, 2, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.DeleteGroups(r.msg.(*kmsg.DeleteGroupsRequest)), nil
	})
	// ConsumerGroupHeartbeat: v0-1 (KIP-848, coordinator/consumer.go). v1
	// adds subscribed_topic_regex and requires a client-generated member id.
	register(kmsg.ConsumerGroupHeartbeat, 0, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		if b.consumerGroupsOff() {
			resp := r.msg.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
		clientID, host := r.memberClient()
		return b.groups.ConsumerGroupHeartbeat(r.msg.(*kmsg.ConsumerGroupHeartbeatRequest), clientID, host), nil
	})
	// ConsumerGroupDescribe: v0-1. v1 adds the member type.
	register(kmsg.ConsumerGroupDescribe, 0, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		req := r.msg.(*kmsg.ConsumerGroupDescribeRequest)
		if b.consumerGroupsOff() {
			resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
			for _, g := range req.Groups {
				rg := kmsg.NewConsumerGroupDescribeResponseGroup()
				rg.Group, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp, nil
		}
		return b.groups.ConsumerGroupDescribe(req), nil
	})
	runAsync(kmsg.JoinGroup, kmsg.SyncGroup)
	coordinated(kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.OffsetCommit, kmsg.OffsetFetch,
		kmsg.OffsetDelete, kmsg.DescribeGroups, kmsg.DeleteGroups, kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe)
}

// consumerTopics lists the topics for consumer-protocol groups.
func (b *Broker) consumerTopics() []coordinator.ConsumerTopic {
	ts := b.topicList()
	out := make([]coordinator.ConsumerTopic, 0, len(ts))
	for _, t := range ts {
		out = append(out, coordinator.ConsumerTopic{Name: t.name, ID: t.id, Partitions: int32(len(b.partitionsOf(t)))})
	}
	return out
}

// memberClient returns the client id and the host ("/127.0.0.1") of the
// connection the request came on, as group members are described with.
func (r *request) memberClient() (clientID, host string) {
	if r.hdr.ClientID != nil {
		clientID = *r.hdr.ClientID
	}
	host = r.conn.nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return clientID, "/" + host
}
