package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopics_AnswerShapes: as Kafka answers, a topic named twice gets
// one INVALID_REQUEST entry after the others, an error entry carries an
// empty (not null) Configs array, and validate_only returns a non-zero topic
// id without creating the topic.
func TestCreateTopics_AnswerShapes(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	topicReq := func(name string, parts int32) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, 1
		return rt
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, topicReq("twice", 1), topicReq("ok", 1), topicReq("twice", 2), topicReq("zero", 0))
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 3 {
		t.Fatalf("%d answers, want 3: %+v", len(resp.Topics), resp.Topics)
	}
	for i, want := range []struct {
		name    string
		code    int16
		configs bool
	}{{"ok", 0, true}, {"zero", kerr.InvalidPartitions.Code, false}, {"twice", kerr.InvalidRequest.Code, false}} {
		got := resp.Topics[i]
		if got.Topic != want.name || got.ErrorCode != want.code {
			t.Errorf("answer %d: %s %v, want %s %v", i, got.Topic, kerr.ErrorForCode(got.ErrorCode), want.name, kerr.ErrorForCode(want.code))
		}
		if got.Configs == nil || (len(got.Configs) > 0) != want.configs {
			t.Errorf("answer %d (%s): configs %v (nil %v)", i, got.Topic, got.Configs, got.Configs == nil)
		}
		if want.code != 0 && (got.NumPartitions != -1 || got.ReplicationFactor != -1 || got.TopicID != [16]byte{}) {
			t.Errorf("error answer %d: partitions %d, rf %d, id %x; want -1, -1, zero", i, got.NumPartitions, got.ReplicationFactor, got.TopicID)
		}
	}

	req = kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = true
	req.Topics = append(req.Topics, topicReq("validated", 2))
	resp, err = req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0]; got.ErrorCode != 0 || got.TopicID == [16]byte{} || got.NumPartitions != 2 {
		t.Fatalf("validate only: %v, id %x, partitions %d", kerr.ErrorForCode(got.ErrorCode), got.TopicID, got.NumPartitions)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("validated")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := mresp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("validated topic exists afterwards: %v", kerr.ErrorForCode(code))
	}
}
