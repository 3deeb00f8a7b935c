package broker

// DescribeLogDirs: v1-4
//
// This broker's log directories: one, the data directory (its absolute
// path), with every local partition asked for (all of them when Topics is
// null; named partitions that have no log here are left out, as in
// Kafka). In a cluster the local partitions are those this broker is a
// replica of; a partition a reassignment moved away is no longer listed
// once its log is closed.
//
// Per partition: Size is the bytes of its segment files; OffsetLag is what
// Kafka reports for a log that is not a future log, max(highWatermark −
// logEndOffset, 0): 0 for a leader, and for a follower too, since its high
// watermark (the leader's, as of its last fetch) never passes its own log
// end offset. How far a follower trails its leader is known only to the
// leader, as Kafka has it. IsFuture is always false: there are no
// intra-broker moves (AlterReplicaLogDirs). v2 is flexible, v3 adds the
// top-level error code, v4 the file system's TotalBytes and UsableBytes
// (statfs, GetDiskFreeSpaceEx on Windows; -1 if it fails).

import (
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeLogDirs, 1, 4, (*Broker).handleDescribeLogDirs) }

func (b *Broker) handleDescribeLogDirs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	if req.Version >= 4 {
		dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
	}
	if b.LogDirError() != nil {
		dir.ErrorCode = kerr.KafkaStorageError.Code // an offline log dir, as Kafka reports it
	}

	var want map[string]map[int32]bool // nil: every partition
	if req.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, rt := range req.Topics {
			if want[rt.Topic] == nil {
				want[rt.Topic] = map[int32]bool{}
			}
			for _, p := range rt.Partitions {
				want[rt.Topic][p] = true
			}
		}
	}
	byTopic := map[string][]*partition{}
	for _, p := range b.allPartitions() {
		if want != nil && !want[p.topic.name][p.index] {
			continue
		}
		byTopic[p.topic.name] = append(byTopic[p.topic.name], p)
	}
	names := make([]string, 0, len(byTopic))
	for name := range byTopic {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		st := kmsg.NewDescribeLogDirsResponseDirTopic()
		st.Topic = name
		parts := byTopic[name]
		slices.SortFunc(parts, func(a, b *partition) int { return int(a.index - b.index) })
		for _, p := range parts {
			sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			sp.Partition = p.index
			sp.Size = p.log.Size()
			sp.OffsetLag = max(p.log.HighWatermark()-p.log.LogEndOffset(), 0)
			st.Partitions = append(st.Partitions, sp)
		}
		dir.Topics = append(dir.Topics, st)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
