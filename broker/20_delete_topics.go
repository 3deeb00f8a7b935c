package broker

// DeleteTopics: v1-6 (v0 was removed in Kafka 4)
//
// Topics are named by name (v1-5) or by name or id (v6; both at once is
// INVALID_REQUEST). Unknown names answer UNKNOWN_TOPIC_OR_PARTITION, unknown
// ids UNKNOWN_TOPIC_ID; delete.topic.enable=false answers
// TOPIC_DELETION_DISABLED. The topic's metadata goes first, then its
// directories are renamed aside and removed in the background, so a topic
// re-created under the same name starts empty with a new id. The
// controller mutation quota (mutation_quota.go) counts the partitions of
// each topic deleted.

import (
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteTopics, 1, 6, (*Broker).handleDeleteTopics) }

func (b *Broker) handleDeleteTopics(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	mq := b.mutationQuotaFor(r, 5)
	defer finishMutations(r, mq)
	type target struct {
		name *string
		id   uuid
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, uuid(t.TopicID)})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: kmsg.StringPtr(n)})
		}
	}
	enabled := b.cfg.boolProp("delete.topic.enable")
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var t *topic
		switch {
		case tg.name != nil && tg.id != (uuid{}):
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("A topic may be named by name or by id, not both.")
		case !enabled:
			st.ErrorCode = kerr.TopicDeletionDisabled.Code
		case tg.name != nil:
			if t = b.lookupTopic(*tg.name); t == nil {
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		default:
			if t = b.lookupTopicID(tg.id); t == nil {
				st.ErrorCode = kerr.UnknownTopicID.Code
			}
		}
		if t != nil && !b.allowed(r, acl.Delete, acl.Topic, t.name) {
			st.ErrorCode, t = kerr.TopicAuthorizationFailed.Code, nil
		} else if t == nil && tg.name != nil && st.ErrorCode == kerr.UnknownTopicOrPartition.Code && !b.allowed(r, acl.Delete, acl.Topic, *tg.name) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		if t != nil && !mq.Record(len(b.partitionsOf(t))) {
			st.Topic, st.TopicID = kmsg.StringPtr(t.name), t.id
			st.ErrorCode, t = throttledErr.Code, nil
		}
		if t != nil {
			st.Topic, st.TopicID = kmsg.StringPtr(t.name), t.id
			if err := b.deleteTopic(t); err != nil {
				b.log.Error("delete topic", "topic", t.name, "err", err)
				st.ErrorCode = kerr.KafkaStorageError.Code
				st.ErrorMessage = kmsg.StringPtr(err.Error())
			}
		}
		if st.ErrorCode != 0 && st.ErrorMessage == nil {
			st.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(st.ErrorCode).(*kerr.Error).Description)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
