package conformance

// Scenarios of the KRaft administration APIs Kafka 4.4 lists to clients:
// UnregisterBroker (64), AddRaftVoter (80), RemoveRaftVoter (81),
// UnregisterController (94), each against the single node (node.id 1,
// a static quorum of itself: kraft.version 0 on both). The live broker is
// unregistered only in the very last scenario (unregisterLiveBrokerScenario):
// Kafka 4.4 accepts that and its broker then stays unregistered (Metadata
// lists no broker), which would spoil any later one; Gregor refuses it
// (broker/64_unregister_broker.go).
// StreamsGroupTopologyDescriptionUpdate (93) without the topology
// description plugin, as both run (conformance.CommonProps).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterID is the broker's cluster id (DescribeCluster).
func clusterID(e *Env) string {
	return Do[*kmsg.DescribeClusterResponse](e, kmsg.NewPtrDescribeClusterRequest()).ClusterID
}

var someDirectoryID = [16]byte{0x5e, 0x1f, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

func addVoter(e *Env, cluster *string, id int32, dir [16]byte, listener string) map[string]any {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.ClusterID, req.TimeoutMillis, req.VoterID, req.VoterDirectoryID = cluster, 5000, id, dir
	if listener != "" {
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = listener, "127.0.0.1", 9999
		req.Listeners = append(req.Listeners, l)
	}
	r := Do[*kmsg.AddRaftVoterResponse](e, req)
	return text(r.ErrorCode, r.ErrorMessage)
}

func removeVoter(e *Env, cluster *string, id int32, dir [16]byte) map[string]any {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.ClusterID, req.VoterID, req.VoterDirectoryID = cluster, id, dir
	r := Do[*kmsg.RemoveRaftVoterResponse](e, req)
	return text(r.ErrorCode, r.ErrorMessage)
}

func kraftScenarios() []Scenario {
	return []Scenario{
		{"UnregisterBroker", "ids never registered (2, -1, 1000); the live broker still listed", func(e *Env) any {
			out := map[string]any{}
			for name, id := range map[string]int32{"two": 2, "minusOne": -1, "thousand": 1000} {
				req := kmsg.NewPtrUnregisterBrokerRequest()
				req.BrokerID = id
				r := Do[*kmsg.UnregisterBrokerResponse](e, req)
				out[name] = text(r.ErrorCode, r.ErrorMessage)
			}
			dc := kmsg.NewPtrDescribeClusterRequest()
			dc.IncludeFencedBrokers = true
			var ids []int32
			for _, b := range Do[*kmsg.DescribeClusterResponse](e, dc).Brokers {
				ids = append(ids, b.NodeID)
			}
			out["describeCluster"] = ids
			return out
		}},
		{"AddRaftVoter", "static quorum: another cluster id, no directory id, no controller endpoint, a new voter, the voter itself", func(e *Env) any {
			id := clusterID(e)
			wrong := addVoter(e, sp("not-this-cluster"), 2, someDirectoryID, "CONTROLLER")
			return map[string]any{
				"otherCluster":  wrong["code"],
				"noDirectory":   addVoter(e, &id, 2, [16]byte{}, "CONTROLLER"),
				"noController":  addVoter(e, &id, 2, someDirectoryID, "PLAINTEXT")["code"],
				"newVoter":      addVoter(e, &id, 2, someDirectoryID, "CONTROLLER"),
				"nullClusterID": addVoter(e, nil, 2, someDirectoryID, "CONTROLLER"),
				"itself":        addVoter(e, &id, 1, someDirectoryID, "CONTROLLER"),
			}
		}},
		{"RemoveRaftVoter", "static quorum: another cluster id, no directory id, the voter itself, an unknown voter", func(e *Env) any {
			id := clusterID(e)
			return map[string]any{
				"otherCluster":  removeVoter(e, sp("not-this-cluster"), 1, someDirectoryID)["code"],
				"noDirectory":   removeVoter(e, &id, 1, [16]byte{}),
				"itself":        removeVoter(e, &id, 1, someDirectoryID),
				"unknown":       removeVoter(e, &id, 2, someDirectoryID),
				"nullClusterID": removeVoter(e, nil, 3, someDirectoryID),
			}
		}},
		{"UnregisterController", "an id that is no controller, -1, the active controller", func(e *Env) any {
			out := map[string]any{}
			for name, id := range map[string]int32{"two": 2, "minusOne": -1, "active": 1} {
				req := kmsg.NewPtrUnregisterControllerRequest()
				req.ControllerID = id
				r := Do[*kmsg.UnregisterControllerResponse](e, req)
				out[name] = text(r.ErrorCode, r.ErrorMessage)
			}
			return out
		}},
		{"StreamsGroupTopologyDescriptionUpdate", "no plugin configured: a member's push, an unknown and an empty group; describe with and without the description; the heartbeat never asks", func(e *Env) any {
			findCoordinator(e, "stdu-app", 0)
			j := Do[*kmsg.StreamsGroupHeartbeatResponse](e, streamsJoinReq("stdu-app", "stdu-absent", memberA))
			push := func(group, member string) map[string]any {
				req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
				req.Group, req.MemberID, req.TopologyEpoch = group, member, 0
				n := kmsg.NewTopologyDescriptionNode()
				n.Name, n.NodeType, n.SourceTopics, n.Successors = "KSTREAM-SOURCE-0000000000", 0, []string{"stdu-absent"}, []string{}
				st := kmsg.NewTopologyDescriptionSubtopology()
				st.Nodes = []kmsg.TopologyDescriptionNode{n}
				req.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{st}
				r := Do[*kmsg.StreamsGroupTopologyDescriptionUpdateResponse](e, req)
				return text(r.ErrorCode, r.ErrorMessage)
			}
			describe := func(include bool) any {
				d := kmsg.NewPtrStreamsGroupDescribeRequest()
				d.Groups, d.IncludeTopologyDescription = []string{"stdu-app"}, include
				r := Do[*kmsg.StreamsGroupDescribeResponse](e, d)
				if len(r.Groups) != 1 {
					return len(r.Groups)
				}
				g := r.Groups[0]
				return map[string]any{"code": errName(g.ErrorCode), "status": g.TopologyDescriptionStatus, "description": g.TopologyDescription != nil}
			}
			return map[string]any{
				"joinAsks":       j.TopologyDescriptionRequired,
				"push":           push("stdu-app", j.MemberID),
				"unknownGroup":   push("stdu-none", memberA),
				"emptyGroup":     push("", memberA),
				"describe":       describe(true),
				"describeNotAsk": describe(false),
			}
		}},
	}
}

// unregisterLiveBrokerScenario unregisters the live broker itself. Kafka
// 4.4 accepts it and then lists no broker (its broker stays unregistered
// until restarted); Gregor refuses it. It must run last (All).
var unregisterLiveBrokerScenario = Scenario{"UnregisterBroker", "the live broker itself, then Metadata (run last)", func(e *Env) any {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 1
	r := Do[*kmsg.UnregisterBrokerResponse](e, req)
	md := Do[*kmsg.MetadataResponse](e, metadataReq(false))
	return map[string]any{"unregister": text(r.ErrorCode, r.ErrorMessage), "brokersListed": len(md.Brokers)}
}}
