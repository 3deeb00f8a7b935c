package conformance

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenarios of streams groups (KIP-1071).

// streamsTopology is a word count's topology: subtopology 0 reads
// source and writes <app>-repartition; subtopology 1 reads that and keeps
// a store whose changelog is <app>-store-changelog.
func streamsTopology(app, source string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{source}, []string{app + "-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: app + "-repartition", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: app + "-store-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func streamsJoinReq(app, source, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = app, member, 30000
	req.ProcessID = sp("process-" + member)
	req.Topology = streamsTopology(app, source)
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

func streamsScenarios() []Scenario {
	return []Scenario{
		{"StreamsGroupHeartbeat", "join with a topology whose internal topics are missing, then once they exist", func(e *Env) any {
			e.CreateTopic("sgh-in", 2)
			findCoordinator(e, "sgh-app", 0)
			first := Do[*kmsg.StreamsGroupHeartbeatResponse](e, streamsJoinReq("sgh-app", "sgh-in", memberA))
			e.waitTopic("sgh-app-repartition", 2)
			e.waitTopic("sgh-app-store-changelog", 2)
			hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.MemberEpoch = "sgh-app", memberA, first.MemberEpoch
			var next *kmsg.StreamsGroupHeartbeatResponse
			e.waitFor("the tasks assigned", func() bool {
				next = Do[*kmsg.StreamsGroupHeartbeatResponse](e, hb)
				if next.ErrorCode != 0 {
					return true
				}
				hb.MemberEpoch = next.MemberEpoch
				return len(next.ActiveTasks) > 0
			})
			return map[string]any{"join": first, "assigned": next}
		}},
		{"StreamsGroupHeartbeat", "missing source topic, unknown group, unknown member, no topology", func(e *Env) any {
			findCoordinator(e, "sgh-nosrc", 0)
			nosrc := Do[*kmsg.StreamsGroupHeartbeatResponse](e, streamsJoinReq("sgh-nosrc", "sgh-absent", memberA))
			findCoordinator(e, "sgh-none", 0)
			unknown := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			unknown.Group, unknown.MemberID, unknown.MemberEpoch = "sgh-none", memberA, 3
			member := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			member.Group, member.MemberID, member.MemberEpoch = "sgh-nosrc", memberB, 1
			notop := streamsJoinReq("sgh-none", "sgh-absent", memberA)
			notop.Topology = nil
			return map[string]any{
				"missingSource": nosrc,
				"unknownGroup":  Do[*kmsg.StreamsGroupHeartbeatResponse](e, unknown),
				"unknownMember": Do[*kmsg.StreamsGroupHeartbeatResponse](e, member),
				"noTopology":    Do[*kmsg.StreamsGroupHeartbeatResponse](e, notop),
			}
		}},
		{"UpdateFeatures", "streams.version at 0: ApiVersions, StreamsGroupHeartbeat and StreamsGroupDescribe", func(e *Env) any {
			findCoordinator(e, "sfl-app", 0)
			before := finalizedLevels(e)
			down := updateFeatures(e, 2, false, "streams.version", 0, 2)
			e.waitFor("streams.version finalized at 0", func() bool { return finalizedLevels(e)["streams.version"] == 0 })
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
			advertised := map[string]bool{}
			for _, k := range Do[*kmsg.ApiVersionsResponse](e, req).ApiKeys {
				if k := kmsg.Key(k.ApiKey); k == kmsg.StreamsGroupHeartbeat || k == kmsg.StreamsGroupDescribe {
					advertised[kmsg.NameForKey(int16(k))] = true
				}
			}
			var hbCode any = "connection closed"
			if r, err := e.Try(streamsJoinReq("sfl-app", "sfl-in", memberA)); err == nil {
				hbCode = errName(r.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode)
			}
			d := kmsg.NewPtrStreamsGroupDescribeRequest()
			d.Groups = []string{"sfl-app"}
			var dCode any = "connection closed"
			if r, err := e.Try(d); err == nil && len(r.(*kmsg.StreamsGroupDescribeResponse).Groups) == 1 {
				dCode = errName(r.(*kmsg.StreamsGroupDescribeResponse).Groups[0].ErrorCode)
			}
			up := updateFeatures(e, 2, false, "streams.version", int(before["streams.version"]), 1)
			return map[string]any{"downgrade": down, "advertised": advertised, "heartbeat": hbCode, "describe": dCode, "restore": up}
		}},
		{"ListGroups", "a streams group: type, protocol type and state; DescribeGroups of it", func(e *Env) any {
			findCoordinator(e, "sgl-app", 0)
			Do[*kmsg.StreamsGroupHeartbeatResponse](e, streamsJoinReq("sgl-app", "sgl-absent", memberA))
			lg := kmsg.NewPtrListGroupsRequest()
			lg.TypesFilter = []string{"streams"}
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Groups = []string{"sgl-app"}
			return map[string]any{"list": Do[*kmsg.ListGroupsResponse](e, lg), "describe": Do[*kmsg.DescribeGroupsResponse](e, dg)}
		}},
		{"OffsetCommit", "streams group: the member's epoch, an older epoch, an unknown member", func(e *Env) any {
			e.CreateTopic("sgo-in", 1)
			findCoordinator(e, "sgo-app", 0)
			j := Do[*kmsg.StreamsGroupHeartbeatResponse](e, streamsJoinReq("sgo-app", "sgo-in", memberA))
			return map[string]any{
				"current": Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("sgo-app", memberA, j.MemberEpoch, "sgo-in", 0, 1)),
				"older":   Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("sgo-app", memberA, j.MemberEpoch-1, "sgo-in", 0, 2)),
				"unknown": Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("sgo-app", memberB, j.MemberEpoch, "sgo-in", 0, 3)),
			}
		}},
		{"StreamsGroupDescribe", "unknown group, classic group and a streams group", func(e *Env) any {
			joinedGroup(e, "sgd-classic")
			findCoordinator(e, "sgd-none", 0)
			findCoordinator(e, "sgd-app", 0)
			Do[*kmsg.StreamsGroupHeartbeatResponse](e, streamsJoinReq("sgd-app", "sgd-absent", memberA))
			req := kmsg.NewPtrStreamsGroupDescribeRequest()
			req.Groups = []string{"sgd-none", "sgd-classic", "sgd-app"}
			return Do[*kmsg.StreamsGroupDescribeResponse](e, req)
		}},
	}
}
