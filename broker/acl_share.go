package broker

// The authorizer's checks of the share-group APIs (KIP-932), as Kafka's
// KafkaApis makes them: READ on the group for ShareGroupHeartbeat,
// ShareFetch, ShareAcknowledge and AlterShareGroupOffsets, DESCRIBE for
// ShareGroupDescribe and DescribeShareGroupOffsets, DELETE for
// DeleteShareGroupOffsets (GROUP_AUTHORIZATION_FAILED); DESCRIBE on the
// subscribed topics of a heartbeat, READ on the topics fetched,
// acknowledged or whose offsets are altered or deleted
// (TOPIC_AUTHORIZATION_FAILED, partition by partition).

import (
	"reflect"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	aclChecks[kmsg.ShareGroupHeartbeat] = checkShareGroupHeartbeat
	aclChecks[kmsg.ShareGroupDescribe] = checkShareGroupDescribe
	aclChecks[kmsg.ShareFetch] = checkShareFetch
	aclChecks[kmsg.ShareAcknowledge] = checkShareAcknowledge
	aclChecks[kmsg.DescribeShareGroupOffsets] = checkDescribeShareGroupOffsets
	aclChecks[kmsg.AlterShareGroupOffsets] = checkShareGroupTopics(acl.Read)
	aclChecks[kmsg.DeleteShareGroupOffsets] = checkShareGroupTopics(acl.Delete)
}

// checkShareGroupHeartbeat: READ on the group, DESCRIBE on every
// subscribed topic.
func checkShareGroupHeartbeat(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.ShareGroupHeartbeatRequest)
	code := b.heartbeatDenied(r, req.GroupID, req.SubscribedTopicNames)
	if code == 0 {
		return nil, nil
	}
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = code
	return resp, nil
}

// checkShareGroupDescribe: DESCRIBE on each group.
func checkShareGroupDescribe(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return b.splitRequest(r, "GroupIDs", "Groups", b.groupCode(r, acl.Describe))
}

// shareTopicsByID refuses, topic by topic, the topics named by id without
// READ; an unknown id is left to the handler (UNKNOWN_TOPIC_ID).
func (b *Broker) shareTopicsByID(r *request) func(e reflect.Value) int16 {
	return func(e reflect.Value) int16 {
		id := e.FieldByName("TopicID").Interface().([16]byte)
		name := b.topicNameByID(id)
		if name == "" {
			return 0
		}
		return b.topicDenied(r, acl.Read, name)
	}
}

// checkShareFetch: READ on the group (the whole request refused), then
// READ on each topic.
func checkShareFetch(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.ShareFetchRequest)
	if req.GroupID == nil || !b.groupAllowed(r, acl.Read, *req.GroupID) {
		return b.denyAll(r, kerr.GroupAuthorizationFailed.Code), nil
	}
	return b.splitTopicsKeepingRequest(r, "Topics", b.shareTopicsByID(r))
}

// checkShareAcknowledge: as ShareFetch.
func checkShareAcknowledge(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.ShareAcknowledgeRequest)
	if req.GroupID == nil || !b.groupAllowed(r, acl.Read, *req.GroupID) {
		return b.denyAll(r, kerr.GroupAuthorizationFailed.Code), nil
	}
	return b.splitTopicsKeepingRequest(r, "Topics", b.shareTopicsByID(r))
}

// splitTopicsKeepingRequest refuses topics as splitRequest does, but
// always runs the handler: a share session request with every topic
// refused still moves its session on (and may acknowledge or forget).
func (b *Broker) splitTopicsKeepingRequest(r *request, field string, code func(e reflect.Value) int16) (kmsg.Response, func(kmsg.Response)) {
	add, _ := b.split(reflect.ValueOf(r.msg).Elem(), field, field, code)
	if add == nil {
		return nil, nil
	}
	return nil, func(resp kmsg.Response) { add(reflect.ValueOf(resp).Elem()) }
}

// checkDescribeShareGroupOffsets: DESCRIBE on each group.
func checkDescribeShareGroupOffsets(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return b.splitRequest(r, "Groups", "Groups", func(e reflect.Value) int16 {
		if b.groupAllowed(r, acl.Describe, e.FieldByName("GroupID").String()) {
			return 0
		}
		return kerr.GroupAuthorizationFailed.Code
	})
}

// checkShareGroupTopics: op on the group (AlterShareGroupOffsets READ,
// DeleteShareGroupOffsets DELETE; the whole request refused), then READ on
// each topic.
func checkShareGroupTopics(op acl.Operation) aclCheck {
	return func(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
		group := reflect.ValueOf(r.msg).Elem().FieldByName("GroupID").String()
		if !b.groupAllowed(r, op, group) {
			return b.denyAll(r, kerr.GroupAuthorizationFailed.Code), nil
		}
		return b.splitRequest(r, "Topics", "Topics", b.topicCode(r, acl.Read))
	}
}
