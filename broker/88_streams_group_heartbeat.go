package broker

// StreamsGroupHeartbeat: v0-1 (KIP-1071, coordinator/streams.go). v1 adds
// the int64 AcceptableRecoveryLag and TopologyDescriptionRequired, set
// when group.streams.topology.description.plugin.class is set and no
// description is stored for the group's topology epoch, so that the member
// pushes one (93_streams_group_topology_description_update.go).
//
// With streams.version finalized at 0 it answers UNSUPPORTED_VERSION, as
// Kafka does. The coordinator returns the internal topics (repartition,
// changelog) the group's topology needs and the broker lacks; they are
// created here after the heartbeat, as Kafka's KafkaApis creates them
// after its group coordinator answers, with the partition count the
// topology gives them, the replication factor it asks for (0: the
// broker's default.replication.factor) and its topic configs (ones
// Gregor refuses are left out and logged). The member's answer says
// MISSING_INTERNAL_TOPICS meanwhile; its next heartbeat finds them. With
// an authorizer, they are created only with CREATE on the cluster or the
// topic, as Kafka requires; a replication factor above the live brokers or
// more than maxStreamsTopicPartitions partitions leave the topic uncreated
// (logged), so the group stays NotReady.

import (
	"errors"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/coordinator"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.StreamsGroupHeartbeat, 0, 1, func(b *Broker, r *request) (kmsg.Response, error) {
		req := r.msg.(*kmsg.StreamsGroupHeartbeatRequest)
		if b.streamsGroupsOff() {
			resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ErrorMessage = kmsg.StringPtr("The cluster does not support the STREAMS group protocol or does not support the versions of the STREAMS group protocol used by this client.")
			return resp, nil
		}
		clientID, host := r.memberClient()
		resp, create := b.groups.StreamsGroupHeartbeat(req, clientID, host)
		b.createStreamsTopics(r, req.Group, create)
		return resp, nil
	})
	coordinated(kmsg.StreamsGroupHeartbeat)
}

// maxStreamsTopicPartitions bounds the partitions of an internal topic a
// topology (a wire value) makes the broker create.
const maxStreamsTopicPartitions = 10000

// createStreamsTopics creates the internal topics of a streams group.
func (b *Broker) createStreamsTopics(r *request, group string, create []coordinator.StreamsTopic) {
	var specs []newTopic
	for _, t := range create {
		if err := validateTopicName(t.Name); err != nil {
			b.log.Warn("streams group internal topic not created", "group", group, "topic", t.Name, "err", err)
			continue
		}
		if b.acl.Enabled() && !b.allowedCreate(r, t.Name) {
			b.log.Warn("streams group internal topic not created: no CREATE authorization", "group", group, "topic", t.Name)
			continue
		}
		configs := map[string]string{}
		for k, v := range t.Configs {
			if err := config.ValidateTopic(k, v); err != nil {
				b.log.Warn("streams group internal topic config left out", "group", group, "topic", t.Name, "config", k, "err", err)
				continue
			}
			configs[k] = v
		}
		if t.Partitions > maxStreamsTopicPartitions {
			b.log.Warn("streams group internal topic not created: too many partitions", "group", group, "topic", t.Name, "partitions", t.Partitions)
			continue
		}
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, max(t.Partitions, 1), t.ReplicationFactor
		if rt.ReplicationFactor <= 0 {
			rt.ReplicationFactor = -1
		}
		partitions, rf, _, msg, e := b.createTopicsPartitions(rt)
		if e != nil {
			b.log.Warn("streams group internal topic not created", "group", group, "topic", t.Name, "err", msg)
			continue
		}
		specs = append(specs, newTopic{name: t.Name, partitions: partitions, replicationFactor: rf, configs: configs})
	}
	_, errs := b.createTopics(specs)
	for i, err := range errs {
		if err != nil && !errors.Is(err, errTopicExists) {
			b.log.Warn("streams group internal topic not created", "group", group, "topic", specs[i].name, "err", err)
		} else if err == nil {
			b.log.Info("created streams group internal topic", "group", group, "topic", specs[i].name, "partitions", specs[i].partitions)
		}
	}
}
