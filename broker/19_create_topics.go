package broker

// CreateTopics: v2-7 (v0-1 were removed in Kafka 4)
//
// Kafka's validation: topic names ([a-zA-Z0-9._-], ≤ 249, not . or ..;
// INVALID_TOPIC_EXCEPTION, also for names that collide with an existing
// topic when '.' and '_' are treated alike), a topic named twice in one
// request (INVALID_REQUEST, one answer for the name, after the others),
// partitions (INVALID_PARTITIONS), replication factor
// (INVALID_REPLICATION_FACTOR: one broker), manual assignments
// (INVALID_REPLICA_ASSIGNMENT), configs (INVALID_CONFIG), existing topics
// (TOPIC_ALREADY_EXISTS). validate_only checks everything and creates
// nothing (but returns a fresh topic id, as Kafka does). v5+ returns the
// partitions, replication factor and configs (an empty array on an error);
// v7 the topic id. The controller mutation quota (mutation_quota.go)
// counts each topic's partitions, once the topic is otherwise valid.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreateTopics, 2, 7, (*Broker).handleCreateTopics) }

func (b *Broker) handleCreateTopics(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	mq := b.mutationQuotaFor(r, 6)
	defer finishMutations(r, mq)
	seen := map[string]int{}
	var dups []string
	for _, rt := range req.Topics {
		if seen[rt.Topic]++; seen[rt.Topic] == 2 {
			dups = append(dups, rt.Topic)
		}
	}
	// An error answer carries an empty Configs array (Kafka's default), not
	// null; a topic named more than once gets one answer, after the others.
	errTopic := func(name string, e *kerr.Error, msg string) kmsg.CreateTopicsResponseTopic {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = name
		st.ErrorCode = e.Code
		st.ErrorMessage = kmsg.StringPtr(msg)
		st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		return st
	}
	// Each topic is checked in turn; those to create are then created
	// together (createTopics: one durable batch on a single node), and the
	// answers keep the request's order.
	type pending struct {
		at      int // index in resp.Topics
		rt      kmsg.CreateTopicsRequestTopic
		configs map[string]string
	}
	var todo []pending
	var specs []newTopic
	var defaults []kmsg.CreateTopicsResponseTopicConfig // the configs of a topic without its own (createdTopicAnswer)
	for _, rt := range req.Topics {
		if seen[rt.Topic] > 1 {
			continue
		}
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		fail := func(e *kerr.Error, msg string) {
			resp.Topics = append(resp.Topics, errTopic(rt.Topic, e, msg))
		}
		if !b.allowedCreate(r, rt.Topic) {
			fail(kerr.TopicAuthorizationFailed, "Authorization failed.")
			continue
		}
		if err := validateTopicName(rt.Topic); err != nil {
			fail(kerr.InvalidTopicException, err.Error())
			continue
		}
		partitions, rf, assignment, msg, e := b.createTopicsPartitions(rt)
		if e != nil {
			fail(e, msg)
			continue
		}
		configs := map[string]string{}
		var cfgErr error
		for _, c := range rt.Configs {
			if c.Value == nil {
				continue // a null value means "use the default"
			}
			if err := config.ValidateTopic(c.Name, *c.Value); err != nil {
				cfgErr = err
				break
			}
			configs[c.Name] = *c.Value
		}
		if cfgErr != nil {
			fail(kerr.InvalidConfig, cfgErr.Error())
			continue
		}
		if t := b.lookupTopic(rt.Topic); t != nil {
			fail(kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", rt.Topic))
			continue
		}
		if !mq.Record(int(partitions)) {
			fail(throttledErr, throttledErr.Description)
			continue
		}
		if req.ValidateOnly {
			if collides := b.collidingTopic(rt.Topic); collides != "" {
				fail(kerr.InvalidTopicException, fmt.Sprintf("Topic '%s' collides with existing topic: %s", rt.Topic, collides))
				continue
			}
			// Kafka draws the id before it looks at validate_only and
			// returns it; nothing keeps it.
			st.TopicID = newUUID()
			resp.Topics = append(resp.Topics, b.createdTopicAnswer(st, nil, partitions, rf, configs, &defaults))
			continue
		}
		todo = append(todo, pending{at: len(resp.Topics), rt: rt, configs: configs})
		specs = append(specs, newTopic{name: rt.Topic, partitions: partitions, replicationFactor: rf, assignment: assignment, configs: configs})
		resp.Topics = append(resp.Topics, st)
	}
	ts, errs := b.createTopics(specs)
	for k, p := range todo {
		name, err := p.rt.Topic, errs[k]
		var e *kerr.Error
		msg := ""
		switch {
		case err == nil:
			st := resp.Topics[p.at]
			st.TopicID = ts[k].id
			resp.Topics[p.at] = b.createdTopicAnswer(st, ts[k], specs[k].partitions, specs[k].replicationFactor, p.configs, &defaults)
			continue
		case errors.Is(err, metadata.ErrInvalidReplicationFactor):
			e, msg = kerr.InvalidReplicationFactor, err.Error()
		case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
			e, msg = kerr.InvalidReplicaAssignment, err.Error()
		case errors.Is(err, errTopicExists):
			e, msg = kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", name)
		case errors.Is(err, errTopicCollides):
			e, msg = kerr.InvalidTopicException, err.Error()
		default:
			b.log.Error("create topic", "topic", name, "err", err)
			e, msg = kerr.KafkaStorageError, err.Error()
		}
		resp.Topics[p.at] = errTopic(name, e, msg)
	}
	for _, name := range dups {
		resp.Topics = append(resp.Topics, errTopic(name, kerr.InvalidRequest, "Duplicate topic name."))
	}
	return resp, nil
}

// createdTopicAnswer fills a created (or validated) topic's answer: its
// partitions, replication factor (the one t got, when created) and every
// topic config with its value and source.
// The answers of one request's topics without configs of their own share
// one list, *defaults, made by the first (an encoder only reads it).
func (b *Broker) createdTopicAnswer(st kmsg.CreateTopicsResponseTopic, t *topic, partitions int32, rf int16, configs map[string]string, defaults *[]kmsg.CreateTopicsResponseTopicConfig) kmsg.CreateTopicsResponseTopic {
	st.NumPartitions = partitions
	st.ReplicationFactor = rf
	if t != nil {
		if parts := b.partitionsOf(t); len(parts) > 0 {
			st.ReplicationFactor = int16(len(b.partitionView(parts[0]).replicas))
		}
	}
	if len(configs) == 0 && *defaults != nil {
		st.Configs = *defaults
		return st
	}
	st.Configs = make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(config.TopicDefs))
	for _, d := range config.TopicDefs {
		v, src := b.topicConfigValue(configs, d.Name)
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = d.Name, kmsg.StringPtr(v), int8(src)
		st.Configs = append(st.Configs, c)
	}
	if len(configs) == 0 {
		*defaults = st.Configs
	}
	return st
}

// createTopicsPartitions checks a topic's partition count, replication
// factor and manual assignment; it returns the partition count.
func (b *Broker) createTopicsPartitions(rt kmsg.CreateTopicsRequestTopic) (int32, int16, map[int32][]int32, string, *kerr.Error) {
	brokers, _ := b.brokersView()
	live := map[int32]bool{}
	for _, br := range brokers {
		live[br.id] = true
	}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return 0, 0, nil, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.", kerr.InvalidRequest
		}
		got := map[int32]bool{}
		assignment := map[int32][]int32{}
		rf := len(rt.ReplicaAssignment[0].Replicas)
		for _, a := range rt.ReplicaAssignment {
			if a.Partition < 0 || int(a.Partition) >= len(rt.ReplicaAssignment) || got[a.Partition] {
				return 0, 0, nil, "Unexpected existing or out-of-order partition ids in replica assignment.", kerr.InvalidReplicaAssignment
			}
			got[a.Partition] = true
			if len(a.Replicas) == 0 || len(a.Replicas) != rf {
				return 0, 0, nil, fmt.Sprintf("All partitions should have the same number of replicas: partition %d has %d.", a.Partition, len(a.Replicas)), kerr.InvalidReplicaAssignment
			}
			seen := map[int32]bool{}
			for _, r := range a.Replicas {
				if seen[r] {
					return 0, 0, nil, fmt.Sprintf("Duplicate brokers not allowed in replica assignment: %v for partition id %d.", a.Replicas, a.Partition), kerr.InvalidReplicaAssignment
				}
				seen[r] = true
				if !live[r] {
					if b.cluster == nil {
						return 0, 0, nil, fmt.Sprintf("Replica assignment %v for partition %d names brokers other than the only one, %d.", a.Replicas, a.Partition, b.nodeID), kerr.InvalidReplicaAssignment
					}
					return 0, 0, nil, fmt.Sprintf("Unknown broker %d in replica assignment %v for partition %d.", r, a.Replicas, a.Partition), kerr.InvalidReplicaAssignment
				}
			}
			assignment[a.Partition] = a.Replicas
		}
		return int32(len(rt.ReplicaAssignment)), int16(rf), assignment, "", nil
	}
	n := rt.NumPartitions
	if n == -1 {
		n = int32(b.cfg.int64Prop("num.partitions"))
	}
	if n <= 0 {
		return 0, 0, nil, "Number of partitions must be larger than 0.", kerr.InvalidPartitions
	}
	rf := rt.ReplicationFactor
	if rf == -1 {
		rf = int16(b.cfg.int64Prop("default.replication.factor"))
	}
	if rf <= 0 {
		return 0, 0, nil, "Replication factor must be larger than 0.", kerr.InvalidReplicationFactor
	}
	if int(rf) > len(brokers) {
		return 0, 0, nil, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(brokers)), kerr.InvalidReplicationFactor
	}
	return n, rf, nil, "", nil
}

// collidingTopic names an existing topic that differs from name only in
// '.' versus '_' (their metric names would collide, so Kafka refuses it).
func (b *Broker) collidingTopic(name string) string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.collidingTopicLocked(name)
}

// collidingTopicLocked is collidingTopic. Lock should be held.
func (b *Broker) collidingTopicLocked(name string) string {
	if !strings.ContainsAny(name, "._") {
		return "" // only a name with '.' or '_' has another of the same metric name
	}
	for _, other := range b.topicsByMetricName[metricName(name)] {
		if other != name {
			return other
		}
	}
	return ""
}

// metricName is a topic's name in metric names, where '.' is '_'.
func metricName(topic string) string { return strings.ReplaceAll(topic, ".", "_") }
