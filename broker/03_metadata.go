package broker

// Metadata: v0-13
//
// A single broker is every partition's leader, replica and ISR. A null topic
// list (v1+; an empty one in v0) asks for every topic. Unknown topics are
// created when the request allows it (always before v4) and
// auto.create.topics.enable is true, with num.partitions partitions; the
// creation is synchronous, so the answer already carries the new topic.
// v10+ returns topic ids; v12+ accepts topics named only by id
// (UNKNOWN_TOPIC_ID when stale).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Metadata, 0, 13, (*Broker).handleMetadata) }

func (b *Broker) handleMetadata(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	brokers, controller := b.brokersView()
	for _, br := range brokers {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: br.id, Host: br.host, Port: br.port, Rack: br.rack})
	}
	resp.ClusterID = &b.clusterID
	resp.ControllerID = controller
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterAuthorizedOps(r)
	}
	allowCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && b.cfg.boolProp("auto.create.topics.enable")

	var topics []*topic
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		b.mu.RLock()
		for _, t := range b.topics {
			topics = append(topics, t)
		}
		b.mu.RUnlock()
		for _, t := range topics {
			if !b.metadataVisible(r, t.name) {
				continue
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(r, t, req))
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			if t := b.lookupTopicID(uuid(rt.TopicID)); t != nil && !b.metadataVisible(r, t.name) {
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if t != nil {
				mt = b.metadataTopic(r, t, req)
			} else {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		if err := validateTopicName(name); err != nil {
			mt.ErrorCode = errInvalidTopic.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !b.metadataVisible(r, name) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		t := b.lookupTopic(name)
		if t == nil && allowCreate && !b.allowedCreate(r, name) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t == nil && allowCreate {
			var err error
			t, err = b.createTopic(name, int32(b.cfg.int64Prop("num.partitions")), nil)
			if err == errTopicExists {
				t = b.lookupTopic(name)
			} else if err != nil {
				b.log.Warn("auto-create topic failed", "topic", name, "err", err)
				mt.ErrorCode = kerr.UnknownServerError.Code
				if errors.Is(err, errTopicCollides) {
					mt.ErrorCode = kerr.InvalidTopicException.Code
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if t == nil {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(r, t, req))
	}
	return resp, nil
}

func (b *Broker) metadataTopic(r *request, t *topic, req *kmsg.MetadataRequest) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.name)
	mt.TopicID = t.id
	mt.IsInternal = isInternalTopic(t.name)
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		mt.AuthorizedOperations = b.topicAuthorizedOps(r, t.name)
	}
	for _, p := range b.partitionsOf(t) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		v := b.partitionView(p)
		mp.Leader, mp.LeaderEpoch = v.leader, v.leaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = v.replicas, v.isr, v.offline
		if v.leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
