package broker

// The classic group APIs are answered by package coordinator; these files
// only register their versions and pass the decoded request through.
//
//	JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup v0-5,
//	OffsetCommit v2-9 (v0-1 were removed in Kafka 4), OffsetFetch v1-9,
//	OffsetDelete v0, DescribeGroups v0-6, ListGroups v0-5, DeleteGroups v0-2.
//
// JoinGroup and SyncGroup block while the group rebalances; they run in
// their own goroutine like every request, and end when the connection does.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.JoinGroup, 0, 9, func(b *Broker, r *request) (kmsg.Response, error) {
		clientID := ""
		if r.hdr.ClientID != nil {
			clientID = *r.hdr.ClientID
		}
		host := r.conn.nc.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return b.groups.JoinGroup(r.ctx, r.msg.(*kmsg.JoinGroupRequest), clientID, "/"+host), nil
	})
	register(kmsg.SyncGroup, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.SyncGroup(r.ctx, r.msg.(*kmsg.SyncGroupRequest)), nil
	})
	register(kmsg.Heartbeat, 0, 4, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.Heartbeat(r.msg.(*kmsg.HeartbeatRequest)), nil
	})
	register(kmsg.LeaveGroup, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.LeaveGroup(r.msg.(*kmsg.LeaveGroupRequest)), nil
	})
	register(kmsg.OffsetCommit, 2, 9, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.OffsetCommit(r.msg.(*kmsg.OffsetCommitRequest)), nil
	})
	register(kmsg.OffsetFetch, 1, 9, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.OffsetFetch(r.msg.(*kmsg.OffsetFetchRequest)), nil
	})
	register(kmsg.OffsetDelete, 0, 0, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.OffsetDelete(r.msg.(*kmsg.OffsetDeleteRequest)), nil
	})
	register(kmsg.DescribeGroups, 0, 6, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.DescribeGroups(r.msg.(*kmsg.DescribeGroupsRequest)), nil
	})
	register(kmsg.ListGroups, 0, 5, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.ListGroups(r.msg.(*kmsg.ListGroupsRequest)), nil
	})
	register(kmsg.DeleteGroups, 0, 2, func(b *Broker, r *request) (kmsg.Response, error) {
		return b.groups.DeleteGroups(r.msg.(*kmsg.DeleteGroupsRequest)), nil
	})
	runAsync(kmsg.JoinGroup, kmsg.SyncGroup)
}
