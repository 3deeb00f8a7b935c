package broker

// The authorizer's checks in the handlers, one helper per handler, as
// Kafka's KafkaApis makes them. With no authorizer every helper allows.

import (
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicDenied returns TOPIC_AUTHORIZATION_FAILED when the request's client
// may not do op on the topic, else 0.
func (b *Broker) topicDenied(r *request, op acl.Operation, topic string) int16 {
	if b.allowed(r, op, acl.Topic, topic) {
		return 0
	}
	return kerr.TopicAuthorizationFailed.Code
}

// produceAuth returns the error of each topic of a Produce: a transactional
// batch needs WRITE on its transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), every topic
// WRITE on the topic (checked before the topic's existence).
func (b *Broker) produceAuth(r *request, req *kmsg.ProduceRequest) func(topic string) int16 {
	if hasTransactionalRecords(req) && (req.TransactionID == nil ||
		b.acl.Enabled() && !b.allowed(r, acl.Write, acl.TransactionalID, *req.TransactionID)) {
		return func(string) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }
	}
	if !b.acl.Enabled() {
		return func(string) int16 { return 0 }
	}
	return func(topic string) int16 { return b.topicDenied(r, acl.Write, topic) }
}

// authorizeFetch fails the partitions the client may not fetch: a
// follower's Fetch needs CLUSTER_ACTION on the cluster (else every partition
// is TOPIC_AUTHORIZATION_FAILED), a consumer's READ on each topic. Topics
// named by an unknown id stay UNKNOWN_TOPIC_ID.
func (b *Broker) authorizeFetch(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget) {
	if !b.acl.Enabled() {
		return
	}
	follower := fetchReplicaID(req) >= 0
	clusterOK := follower && b.allowed(r, acl.ClusterAction, acl.Cluster, acl.ClusterName)
	for i := range targets {
		tg := &targets[i]
		if tg.code == kerr.UnknownTopicID.Code {
			continue
		}
		ok := clusterOK
		if !follower {
			ok = b.allowed(r, acl.Read, acl.Topic, resp.Topics[tg.ti].Topic)
		}
		if !ok {
			tg.code, tg.part = kerr.TopicAuthorizationFailed.Code, nil
		}
	}
}

// initProducerIDAuth: a transactional id needs WRITE on it; an idempotent
// producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679).
func (b *Broker) initProducerIDAuth(r *request, req *kmsg.InitProducerIDRequest) int16 {
	if !b.acl.Enabled() {
		return 0
	}
	if req.TransactionalID != nil {
		if !b.allowed(r, acl.Write, acl.TransactionalID, *req.TransactionalID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	}
	if !b.allowed(r, acl.IdempotentWrite, acl.Cluster, acl.ClusterName) && !b.allowedAny(r, acl.Write, acl.Topic) {
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

// allowedCreate: CREATE on the cluster or on the topic.
func (b *Broker) allowedCreate(r *request, topic string) bool {
	return b.allowed(r, acl.Create, acl.Cluster, acl.ClusterName) || b.allowed(r, acl.Create, acl.Topic, topic)
}

// metadataVisible tells whether a topic may appear in a Metadata answer
// (DESCRIBE on it): topics the client may not describe are left out of a
// request for all topics, and answered TOPIC_AUTHORIZATION_FAILED when
// named, whether they exist or not.
func (b *Broker) metadataVisible(r *request, topic string) bool {
	return b.allowed(r, acl.Describe, acl.Topic, topic)
}

// topicAuthorizedOps and clusterAuthorizedOps are KIP-430's fields.
func (b *Broker) topicAuthorizedOps(r *request, topic string) int32 {
	if !b.acl.Enabled() {
		return topicAuthorizedOps
	}
	return b.authorizedOps(r, acl.Topic, topic, topicOps...)
}

// clusterAuthorizedOps is 0 without DESCRIBE on the cluster, as in Kafka's
// Metadata and DescribeCluster.
func (b *Broker) clusterAuthorizedOps(r *request) int32 {
	if !b.acl.Enabled() {
		return clusterAuthorizedOps
	}
	if !b.allowed(r, acl.Describe, acl.Cluster, acl.ClusterName) {
		return 0
	}
	return b.authorizedOps(r, acl.Cluster, acl.ClusterName, clusterOps...)
}

// coordinatorKeyDenied is FindCoordinator's check of one key: DESCRIBE on
// the group or on the transactional id, CLUSTER_ACTION for a
// share-partition.
func (b *Broker) coordinatorKeyDenied(r *request, keyType int8, key string) int16 {
	switch {
	case keyType == 0 && !b.allowed(r, acl.Describe, acl.Group, key):
		return kerr.GroupAuthorizationFailed.Code
	case keyType == 1 && !b.allowed(r, acl.Describe, acl.TransactionalID, key):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case keyType == 2 && !b.allowed(r, acl.ClusterAction, acl.Cluster, acl.ClusterName):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}
