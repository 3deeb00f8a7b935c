package coordinator

// The topology of a streams group (KIP-1071) and its configuration against
// the broker's topics, as Kafka's group coordinator does it before it
// assigns tasks:
//
//   - every source topic of every subtopology must exist, else the group is
//     NotReady and members get MISSING_SOURCE_TOPICS;
//   - a repartition topic without a partition count takes the largest
//     partition count of the source topics (and repartition source topics)
//     of the subtopology that writes to it, until nothing changes;
//     copartitioned repartition topics take the count of their group;
//   - source topics of one copartition group must agree, else
//     INCORRECTLY_PARTITIONED_TOPICS;
//   - a subtopology has as many tasks as its largest input topic has
//     partitions, and its changelog topics as many partitions as it has
//     tasks;
//   - internal topics (repartition and changelog) that do not exist are
//     returned to be created (MISSING_INTERNAL_TOPICS meanwhile); existing
//     ones with another partition count are INCORRECTLY_PARTITIONED_TOPICS.
//
// A group whose topology is configured has tasks (subtopology, partition);
// otherwise it has none and its members get empty assignments.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeat responses.
const (
	streamsStatusStaleTopology         int8 = 0
	streamsStatusMissingSourceTopics   int8 = 1
	streamsStatusIncorrectlyPartition  int8 = 2
	streamsStatusMissingInternalTopics int8 = 3
	streamsStatusShutdownApplication   int8 = 4
)

// StreamsTopic is an internal topic of a streams group to be created:
// a repartition or changelog topic, with the partition count the topology
// gives it, its replication factor (0: the broker's default) and configs.
type StreamsTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// streamsTopology is the topology a streams group runs, as its members
// sent it (the request's form is also the record's).
type streamsTopology struct {
	epoch         int32
	subtopologies []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology
}

// configuredTopology is a topology configured against the topics: the
// number of tasks of each subtopology, or why it cannot run.
type configuredTopology struct {
	tasks    map[string]int32 // subtopology → number of tasks
	statuses []kmsg.StreamsGroupHeartbeatResponseStatus
	create   []StreamsTopic
	// inputs lists each subtopology's input topics (source and
	// repartition source), for the interactive-query endpoints.
	inputs map[string][]string
	// metadata describes the topics the configuration read and their
	// partition counts; a change bumps the group epoch.
	metadata string
}

func (ct *configuredTopology) ready() bool { return ct != nil && ct.tasks != nil }

// validateTopology checks a topology sent by a joining member; it returns
// the message of an INVALID_REQUEST, "" if it is valid.
func validateTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) string {
	seen := map[string]bool{}
	for _, st := range t.Subtopologies {
		if st.SubtopologyID == "" {
			return "Subtopology IDs must be non-empty."
		}
		if seen[st.SubtopologyID] {
			return "Duplicate subtopology ID " + st.SubtopologyID + "."
		}
		seen[st.SubtopologyID] = true
		for _, cg := range st.CopartitionGroups {
			for _, i := range cg.SourceTopics {
				if i < 0 || int(i) >= len(st.SourceTopics) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to source topic %d, which does not exist.", st.SubtopologyID, i)
				}
			}
			for _, i := range cg.RepartitionSourceTopics {
				if i < 0 || int(i) >= len(st.RepartitionSourceTopics) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to repartition source topic %d, which does not exist.", st.SubtopologyID, i)
				}
			}
			for _, i := range cg.SourceTopicRegex {
				if i < 0 || int(i) >= len(st.SourceTopicRegex) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to source topic regex %d, which does not exist.", st.SubtopologyID, i)
				}
			}
		}
		for _, ti := range st.StateChangelogTopics {
			if ti.NumPartitions != 0 {
				return "Number of partitions of changelog topic " + ti.Topic + " must not be set."
			}
		}
	}
	return ""
}

// configure configures t against topics.
func (t *streamsTopology) configure(topics map[string]ConsumerTopic) *configuredTopology {
	ct := &configuredTopology{inputs: map[string][]string{}}
	var meta strings.Builder
	fmt.Fprintf(&meta, "epoch=%d;", t.epoch)
	partitionsOf := func(name string) (int32, bool) {
		tp, ok := topics[name]
		fmt.Fprintf(&meta, "%s:%d,", name, tp.Partitions)
		return tp.Partitions, ok
	}
	// Source topics.
	var missing []string
	for _, st := range t.subtopologies {
		for _, s := range st.SourceTopics {
			if _, ok := partitionsOf(s); !ok && !slices.Contains(missing, s) {
				missing = append(missing, s)
			}
		}
	}
	// Repartition topics: fixed counts, then those derived from the
	// subtopology writing them.
	repart := map[string]int32{}
	for _, st := range t.subtopologies {
		for _, r := range st.RepartitionSourceTopics {
			if r.NumPartitions > 0 {
				repart[r.Topic] = r.NumPartitions
			} else if _, ok := repart[r.Topic]; !ok {
				repart[r.Topic] = 0
			}
		}
	}
	inputMax := func(st *kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) int32 {
		var n int32
		for _, s := range st.SourceTopics {
			n = max(n, topics[s].Partitions)
		}
		for _, r := range st.RepartitionSourceTopics {
			n = max(n, repart[r.Topic])
		}
		return n
	}
	for changed := true; changed; {
		changed = false
		for i := range t.subtopologies {
			st := &t.subtopologies[i]
			n := inputMax(st)
			for _, sink := range st.RepartitionSinkTopics {
				if cur, ok := repart[sink]; ok && cur < n && !fixedRepartition(t, sink) {
					repart[sink] = n
					changed = true
				}
			}
		}
	}
	// Copartition groups.
	var mispartitioned []string
	for i := range t.subtopologies {
		st := &t.subtopologies[i]
		for _, cg := range st.CopartitionGroups {
			var n int32
			var names []string
			for _, si := range cg.SourceTopics {
				name := st.SourceTopics[si]
				names = append(names, name)
				p := topics[name].Partitions
				if n != 0 && p != 0 && p != n {
					mispartitioned = append(mispartitioned, names...)
				}
				n = max(n, p)
			}
			for _, ri := range cg.RepartitionSourceTopics {
				r := st.RepartitionSourceTopics[ri]
				if r.NumPartitions == 0 && n > 0 {
					repart[r.Topic] = n
				}
			}
		}
	}
	for _, st := range t.subtopologies {
		ct.inputs[st.SubtopologyID] = append(slices.Clone(st.SourceTopics), func() []string {
			var out []string
			for _, r := range st.RepartitionSourceTopics {
				out = append(out, r.Topic)
			}
			return out
		}()...)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		ct.statuses = append(ct.statuses, streamsStatus(streamsStatusMissingSourceTopics,
			"Source topics "+strings.Join(missing, ", ")+" are missing."))
		ct.metadata = meta.String()
		return ct
	}
	if len(mispartitioned) > 0 {
		slices.Sort(mispartitioned)
		mispartitioned = slices.Compact(mispartitioned)
		ct.statuses = append(ct.statuses, streamsStatus(streamsStatusIncorrectlyPartition,
			"Following topics are not copartitioned: ["+strings.Join(mispartitioned, ", ")+"]"))
		ct.metadata = meta.String()
		return ct
	}
	// Tasks, changelog topics, and the internal topics to create.
	tasks := map[string]int32{}
	var wrong []string
	want := func(ti kmsg.TopicInfo, n int32) {
		p, ok := partitionsOf(ti.Topic)
		switch {
		case !ok:
			cfg := map[string]string{}
			for _, c := range ti.Configs {
				cfg[c.Key] = c.Value
			}
			if !slices.ContainsFunc(ct.create, func(s StreamsTopic) bool { return s.Name == ti.Topic }) {
				ct.create = append(ct.create, StreamsTopic{Name: ti.Topic, Partitions: n, ReplicationFactor: ti.ReplicationFactor, Configs: cfg})
			}
		case p != n:
			wrong = append(wrong, ti.Topic)
		}
	}
	for i := range t.subtopologies {
		st := &t.subtopologies[i]
		n := inputMax(st)
		tasks[st.SubtopologyID] = n
		for _, r := range st.RepartitionSourceTopics {
			want(r, repart[r.Topic])
		}
		for _, c := range st.StateChangelogTopics {
			want(c, n)
		}
	}
	ct.metadata = meta.String()
	if len(ct.create) > 0 {
		// Kafka 4.4 lists the changelog topics, then the repartition
		// topics, without brackets.
		var changelogs, repartitions []string
		for _, s := range ct.create {
			if _, ok := repart[s.Name]; ok {
				repartitions = append(repartitions, s.Name)
			} else {
				changelogs = append(changelogs, s.Name)
			}
		}
		slices.Sort(changelogs)
		slices.Sort(repartitions)
		ct.statuses = append(ct.statuses, streamsStatus(streamsStatusMissingInternalTopics,
			"Internal topics are missing: "+strings.Join(append(changelogs, repartitions...), ", ")))
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		ct.statuses = append(ct.statuses, streamsStatus(streamsStatusIncorrectlyPartition,
			"Internal topics "+strings.Join(wrong, ", ")+" have an incorrect number of partitions."))
	}
	if len(ct.statuses) == 0 {
		ct.tasks = tasks
	}
	return ct
}

func fixedRepartition(t *streamsTopology, name string) bool {
	for _, st := range t.subtopologies {
		for _, r := range st.RepartitionSourceTopics {
			if r.Topic == name && r.NumPartitions > 0 {
				return true
			}
		}
	}
	return false
}

func streamsStatus(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	s.StatusCode, s.StatusDetail = code, detail
	return s
}
