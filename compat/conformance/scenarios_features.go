package conformance

// Scenarios for UpdateFeatures (57) and the APIs added with issue #28:
// ListConfigResources (74), CLIENT_METRICS configs, DescribeQuorum (55).
// GetTelemetrySubscriptions (71) has none: Kafka 4.4 does not advertise
// 71 and 72 without a metrics reporter plugin (docs/conformance.md's
// notes).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// updateFeatures sends one UpdateFeatures at version v (validate only
// from v1) with updates of name, level and upgrade type.
func updateFeatures(e *Env, v int16, validateOnly bool, updates ...any) map[string]any {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = 10000, validateOnly
	for i := 0; i+2 < len(updates); i += 3 {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = updates[i].(string), int16(updates[i+1].(int)), int8(updates[i+2].(int))
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	r := DoV[*kmsg.UpdateFeaturesResponse](e, req, v)
	out := text(r.ErrorCode, r.ErrorMessage)
	var results []map[string]any
	for _, res := range r.Results {
		results = append(results, map[string]any{"feature": res.Feature, "code": errName(res.ErrorCode), "message": res.ErrorMessage})
	}
	out["results"] = results
	return out
}

func featureScenarios() []Scenario {
	return []Scenario{
		{"UpdateFeatures", "validate only: refusals and their messages (v2)", func(e *Env) any {
			return map[string]any{
				"aboveRange":        updateFeatures(e, 2, true, "group.version", 9, 1),
				"unknown":           updateFeatures(e, 2, true, "foo.version", 1, 1),
				"unknownZero":       updateFeatures(e, 2, true, "foo.version", 0, 2),
				"negative":          updateFeatures(e, 2, true, "group.version", -1, 2),
				"downgradeAsUpdate": updateFeatures(e, 2, true, "group.version", 0, 1),
				"badType":           updateFeatures(e, 2, true, "share.version", 1, 0),
				"metadataSafe":      updateFeatures(e, 2, true, "metadata.version", 20, 2),
				"metadataUnsafe":    updateFeatures(e, 2, true, "metadata.version", 20, 3),
				"metadataAbove":     updateFeatures(e, 2, true, "metadata.version", 40, 1),
				"oneOfTwo":          updateFeatures(e, 2, true, "share.version", 1, 2, "foo.version", 1, 1),
			}
		}},
		{"UpdateFeatures", "validate only: accepted updates (v1 with results, v2 without)", func(e *Env) any {
			return map[string]any{
				"v1":         updateFeatures(e, 1, true, "share.version", 1, 2, "group.version", 1, 1),
				"v2":         updateFeatures(e, 2, true, "share.version", 0, 3),
				"sameLevel":  updateFeatures(e, 2, true, "metadata.version", 33, 1),
				"none":       updateFeatures(e, 2, true),
				"v1Disable":  updateFeatures(e, 1, true, "group.version", 0, 2),
				"v1Refusal":  updateFeatures(e, 1, true, "group.version", 5, 1),
				"duplicates": updateFeatures(e, 1, true, "share.version", 1, 2, "share.version", 0, 2),
			}
		}},
		{"UpdateFeatures", "group.version and share.version at 0: ApiVersions, the group heartbeats and describes, ShareFetch and ShareAcknowledge", func(e *Env) any {
			e.CreateTopic("fl", 1)
			findCoordinator(e, "g-fl", 0)
			findCoordinator(e, "s-fl", 0)
			before := finalizedLevels(e)
			down := updateFeatures(e, 2, false, "group.version", 0, 2, "share.version", 0, 2)
			e.waitFor("group.version and share.version finalized at 0", func() bool {
				l := finalizedLevels(e)
				return l["group.version"] == 0 && l["share.version"] == 0
			})
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
			advertised := map[string]bool{}
			for _, k := range Do[*kmsg.ApiVersionsResponse](e, req).ApiKeys {
				switch kmsg.Key(k.ApiKey) {
				case kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe, kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe,
					kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.DescribeShareGroupOffsets:
					advertised[kmsg.NameForKey(k.ApiKey)] = true
				}
			}
			cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			cgh.Group, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis = "g-fl", 0, 30000
			cgh.MemberID = "AAAAAAAAAAAAAAAAAAAAAA"
			cgh.SubscribedTopicNames = []string{"fl"}
			cgh.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			cg, cgErr := e.TryV(cgh, 0)
			var cgCode any = "connection closed"
			if cgErr == nil {
				cgCode = errName(cg.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
			}
			sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
			sgh.GroupID, sgh.MemberID, sgh.SubscribedTopicNames = "s-fl", memberA, []string{"fl"}
			sg, sgErr := e.TryV(sgh, 1)
			var sgCode any = "connection closed"
			if sgErr == nil {
				sgCode = errName(sg.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)
			}
			cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
			cgd.Groups = []string{"g-fl"}
			var cgdCode any = "connection closed"
			if r, err := e.TryV(cgd, 0); err == nil && len(r.(*kmsg.ConsumerGroupDescribeResponse).Groups) == 1 {
				cgdCode = errName(r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode)
			}
			sgd := kmsg.NewPtrShareGroupDescribeRequest()
			sgd.GroupIDs = []string{"s-fl"}
			var sgdCode any = "connection closed"
			if r, err := e.TryV(sgd, 1); err == nil && len(r.(*kmsg.ShareGroupDescribeResponse).Groups) == 1 {
				sgdCode = errName(r.(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode)
			}
			var sfCode any = "connection closed"
			if r, err := e.TryV(shareFetchReq("s-fl", memberA, 0, e.TopicID("fl"), 0), 1); err == nil {
				sfCode = errName(r.(*kmsg.ShareFetchResponse).ErrorCode)
			}
			ack := kmsg.NewPtrShareAcknowledgeRequest()
			group, member := "s-fl", memberA
			ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &member, 1
			var saCode any = "connection closed"
			if r, err := e.TryV(ack, 1); err == nil {
				saCode = errName(r.(*kmsg.ShareAcknowledgeResponse).ErrorCode)
			}
			up := updateFeatures(e, 2, false, "group.version", int(before["group.version"]), 1, "share.version", int(before["share.version"]), 1)
			return map[string]any{"downgrade": down, "advertised": advertised, "consumerHeartbeat": cgCode, "shareHeartbeat": sgCode,
				"consumerDescribe": cgdCode, "shareDescribe": sgdCode, "shareFetch": sfCode, "shareAcknowledge": saCode, "restore": up}
		}},
		{"ListConfigResources", "v0 and v1: client metrics subscriptions and group configs", func(e *Env) any {
			cm := clientMetrics(e, "lcr-sub", "interval.ms", "1000")
			findCoordinator(e, "lcr-group", 0)
			gc := groupConfig(e, "lcr-group", "share.auto.offset.reset", "earliest")
			v0 := DoV[*kmsg.ListConfigResourcesResponse](e, kmsg.NewPtrListConfigResourcesRequest(), 0)
			req := kmsg.NewPtrListConfigResourcesRequest()
			req.ResourceTypes = []int8{16, 32}
			v1 := DoV[*kmsg.ListConfigResourcesResponse](e, req, 1)
			bad := kmsg.NewPtrListConfigResourcesRequest()
			bad.ResourceTypes = []int8{3}
			return map[string]any{"set": cm, "group": gc, "v0": v0, "v1": v1, "unlisted": DoV[*kmsg.ListConfigResourcesResponse](e, bad, 1)}
		}},
		{"IncrementalAlterConfigs", "CLIENT_METRICS: validation errors and their messages", func(e *Env) any {
			out := map[string]any{}
			for k, kv := range map[string][2]string{
				"interval":       {"interval.ms", "50"},
				"intervalNotNum": {"interval.ms", "abc"},
				"unknownKey":     {"no.such", "1"},
				"badMatch":       {"match", "client_id=[bad"},
				"badMatchKey":    {"match", "nope=x"},
			} {
				r := clientMetrics(e, "cm-bad", kv[0], kv[1]).Resources[0]
				out[k] = text(r.ErrorCode, r.ErrorMessage)
			}
			return out
		}},
		{"DescribeQuorum", "single node: shape", func(e *Env) any {
			req := kmsg.NewPtrDescribeQuorumRequest()
			t := kmsg.NewDescribeQuorumRequestTopic()
			t.Topic = "__cluster_metadata"
			p := kmsg.NewDescribeQuorumRequestTopicPartition()
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			r := Do[*kmsg.DescribeQuorumResponse](e, req)
			out := map[string]any{"code": errName(r.ErrorCode), "topics": len(r.Topics), "nodes": len(r.Nodes)}
			if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
				rp := r.Topics[0].Partitions[0]
				var voters []any
				for _, v := range rp.CurrentVoters {
					voters = append(voters, map[string]any{"id": v.ReplicaID, "logEndIsHW": v.LogEndOffset == rp.HighWatermark, "fetchSet": v.LastFetchTimestamp > 0})
				}
				out["topic"], out["partition"] = r.Topics[0].Topic, map[string]any{"code": errName(rp.ErrorCode), "leader": rp.LeaderID,
					"epochPositive": rp.LeaderEpoch > 0, "hwPositive": rp.HighWatermark > 0, "voters": voters, "observers": len(rp.Observers)}
			}
			for _, n := range r.Nodes {
				var names []string
				for _, l := range n.Listeners {
					names = append(names, l.Name)
				}
				out["node"] = map[string]any{"id": n.NodeID, "listeners": names}
			}
			return out
		}},
	}
}

// finalizedLevels are the finalized feature levels ApiVersions v4 lists
// (a feature at 0 is not listed).
func finalizedLevels(e *Env) map[string]int16 {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
	out := map[string]int16{}
	for _, f := range DoV[*kmsg.ApiVersionsResponse](e, req, 4).FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out
}

// clientMetrics sets one config of the CLIENT_METRICS resource name.
func clientMetrics(e *Env, name, key, value string) *kmsg.IncrementalAlterConfigsResponse {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, sp(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return Do[*kmsg.IncrementalAlterConfigsResponse](e, req)
}
