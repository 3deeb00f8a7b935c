package coordinator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Commands of the data-driven tests for consumer-protocol groups
// (testdata/cgh_*.txt):
//
//	cgh member=m1 epoch=0 topics=t,u regex=... assignor=range instance=i owned=t:0,1;u:0 version=1
//	cgdescribe group=g
//	create-topic name:partitions
//
// A topic's id is its name, zero-padded, so assignments print by name.

func (h *harness) setConsumerTopics(parts map[string]int32) {
	h.topics = parts
	h.cfg.Topics = func() []ConsumerTopic {
		var out []ConsumerTopic
		for _, name := range sortedKeys(h.topics) {
			out = append(out, ConsumerTopic{Name: name, ID: testTopicID(name), Partitions: h.topics[name]})
		}
		return out
	}
}

func (h *harness) openConsumer(a ddArgs) {
	h.cfg.ConsumerSessionTimeout = a.dur(h.t, "consumer-session", 0)
	h.cfg.ConsumerHeartbeatInterval = a.dur(h.t, "consumer-interval", 0)
	h.cfg.ConsumerAssignors = a.list("assignors")
	h.cfg.ConsumerMigrationPolicy = a.str("migration", "")
}

func testTopicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func testTopicName(id [16]byte) string { return strings.TrimRight(string(id[:]), "\x00") }

func (h *harness) runConsumer(cmd string, a ddArgs) ([]string, bool) {
	t := h.t
	switch cmd {
	case "create-topic":
		name, n, _ := strings.Cut(a.pos[0], ":")
		v, _ := strconv.Atoi(n)
		h.topics[name] = int32(v)
		return nil, true
	case "cgh":
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = int16(a.int(t, "version", 1))
		req.Group = a.str("group", "g")
		req.MemberID = a.str("member", "")
		req.MemberEpoch = int32(a.int(t, "epoch", 0))
		req.InstanceID = a.strp("instance")
		req.RebalanceTimeoutMillis = int32(a.int(t, "rebalance-timeout", 0))
		if req.MemberEpoch == 0 && req.RebalanceTimeoutMillis == 0 {
			req.RebalanceTimeoutMillis = 60000
		}
		if _, ok := a.kv["topics"]; ok {
			req.SubscribedTopicNames = a.list("topics")
			if req.SubscribedTopicNames == nil {
				req.SubscribedTopicNames = []string{}
			}
		}
		if v, ok := a.kv["regex"]; ok {
			req.SubscribedTopicRegex = &v
		}
		req.ServerAssignor = a.strp("assignor")
		if v, ok := a.kv["owned"]; ok {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for _, tp := range parseTopicParts(v) {
				rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				rt.TopicID = testTopicID(tp.topic)
				rt.Partitions = tp.partitions
				req.Topics = append(req.Topics, rt)
			}
		} else if req.MemberEpoch == 0 {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		r := h.c.ConsumerGroupHeartbeat(req, "client", "/127.0.0.1")
		line := errName(r.ErrorCode)
		if r.ErrorCode == 0 {
			line += fmt.Sprintf(" member=%s epoch=%d interval=%d", deref(r.MemberID), r.MemberEpoch, r.HeartbeatIntervalMillis)
			if r.Assignment != nil {
				as := partitionSet{}
				for _, at := range r.Assignment.Topics {
					for _, p := range at.Partitions {
						as.add(testTopicName(at.TopicID), p)
					}
				}
				line += " assignment=" + as.String()
			}
		}
		return []string{line}, true
	case "cgdescribe":
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version = 1
		req.Groups = []string{a.str("group", "g")}
		var out []string
		for _, g := range h.c.ConsumerGroupDescribe(req).Groups {
			if g.ErrorCode != 0 {
				out = append(out, fmt.Sprintf("%s: %s", g.Group, errName(g.ErrorCode)))
				continue
			}
			out = append(out, fmt.Sprintf("%s state=%s epoch=%d assignment-epoch=%d assignor=%s", g.Group, g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName))
			conv := func(as kmsg.Assignment) string {
				x := partitionSet{}
				for _, at := range as.TopicPartitions {
					for _, p := range at.Partitions {
						x.add(at.Topic, p)
					}
				}
				return x.String()
			}
			for _, m := range g.Members {
				line := fmt.Sprintf("  %s epoch=%d", m.MemberID, m.MemberEpoch)
				if m.MemberType == 0 {
					line += " classic"
				}
				if m.InstanceID != nil {
					line += " instance=" + *m.InstanceID
				}
				switch {
				case m.SubscribedTopicRegex == nil:
					line += " regex=null" // Kafka answers "" without a regex
				case *m.SubscribedTopicRegex != "":
					line += " regex=" + *m.SubscribedTopicRegex
				default:
					line += " topics=" + strings.Join(m.SubscribedTopics, ",")
				}
				line += " assigned=" + conv(m.Assignment) + " target=" + conv(m.TargetAssignment)
				out = append(out, line)
			}
		}
		return out, true
	}
	return nil, false
}
