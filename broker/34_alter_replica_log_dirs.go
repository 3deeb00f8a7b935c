package broker

// AlterReplicaLogDirs: v1-2
//
// Moves replicas between the log directories of this broker. Gregor keeps
// every partition in one directory, the data directory (DescribeLogDirs
// lists it), so the only move there is is to where a replica already is,
// which succeeds and does nothing, as Kafka answers it. Per partition, as
// measured against Kafka 4.4 (compat/conformance):
//
//   - a directory other than the data directory: LOG_DIR_NOT_FOUND (Kafka's
//     "not found in the config");
//   - a topic or partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION;
//   - a partition with no replica on this broker (a cluster):
//     REPLICA_NOT_AVAILABLE, the error Kafka keeps for this API where others
//     say NOT_LEADER_OR_FOLLOWER;
//   - the data directory offline (a failed disk): KAFKA_STORAGE_ERROR.
//
// Authorization (acl_apis.go) is ALTER on the cluster, else every
// partition is CLUSTER_AUTHORIZATION_FAILED.

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterReplicaLogDirs, 1, 2, (*Broker).handleAlterReplicaLogDirs) }

func (b *Broker) handleAlterReplicaLogDirs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AlterReplicaLogDirsRequest)
	own := b.cfg.DataDir
	if abs, err := filepath.Abs(own); err == nil {
		own = abs
	}
	return alterReplicaLogDirsAnswer(req, func(dir, topic string, partition int32) int16 {
		if abs, err := filepath.Abs(dir); err != nil || abs != own {
			return kerr.LogDirNotFound.Code
		}
		parts := b.topicPartitions(topic)
		p := partitionAt(parts, partition)
		switch {
		case p == nil:
			return kerr.UnknownTopicOrPartition.Code
		case p.log == nil:
			return kerr.ReplicaNotAvailable.Code
		case b.LogDirError() != nil:
			return kerr.KafkaStorageError.Code
		}
		return 0
	}), nil
}

// alterReplicaLogDirsAnswer answers every partition of req, grouped by
// topic in the order first named, with the code code gives it.
func alterReplicaLogDirsAnswer(req *kmsg.AlterReplicaLogDirsRequest, code func(dir, topic string, partition int32) int16) *kmsg.AlterReplicaLogDirsResponse {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	at := map[string]int{}
	for _, d := range req.Dirs {
		for _, rt := range d.Topics {
			i, ok := at[rt.Topic]
			if !ok {
				i = len(resp.Topics)
				at[rt.Topic] = i
				st := kmsg.NewAlterReplicaLogDirsResponseTopic()
				st.Topic = rt.Topic
				resp.Topics = append(resp.Topics, st)
			}
			for _, p := range rt.Partitions {
				sp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code(d.Dir, rt.Topic, p)
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
			}
		}
	}
	return resp
}
