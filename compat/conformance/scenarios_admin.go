package conformance

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenarios of metadata and administration.

func adminScenarios() []Scenario {
	return []Scenario{
		{"ApiVersions", "v3: error code and the advertised keys", func(e *Env) any {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
			r := Do[*kmsg.ApiVersionsResponse](e, req)
			// Key presence only: version ranges are listed by the report's
			// version table.
			// Each key by number and name, so the diff names the keys
			// only one broker advertises.
			keys := map[string]any{"ErrorCode": r.ErrorCode, "count": len(r.ApiKeys)}
			advertised := map[string]any{}
			for _, k := range r.ApiKeys {
				advertised[fmt.Sprintf("%02d %s", k.ApiKey, kmsg.NameForKey(k.ApiKey))] = true
			}
			keys["keys"] = advertised
			return keys
		}},
		{"ApiVersions", "v3 and v4: supported and finalized features", func(e *Env) any {
			out := map[string]any{}
			for _, v := range []int16{3, 4} {
				req := kmsg.NewPtrApiVersionsRequest()
				req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
				resp, err := e.TryV(req, v)
				if err != nil {
					return "connection: " + err.Error()
				}
				r := resp.(*kmsg.ApiVersionsResponse)
				supported, finalized := map[string]any{}, map[string]any{}
				for _, f := range r.SupportedFeatures {
					supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
				}
				for _, f := range r.FinalizedFeatures {
					finalized[f.Name] = [2]int16{f.MinVersionLevel, f.MaxVersionLevel}
				}
				out[fmt.Sprintf("v%d", v)] = map[string]any{"supported": supported, "finalized": finalized, "epochSet": r.FinalizedFeaturesEpoch >= 0, "zkMigrationReady": r.ZkMigrationReady}
			}
			return out
		}},
		{"ApiVersions", "unsupported version 127", func(e *Env) any {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
			resp, err := e.TryV(req, 127)
			if err != nil {
				return "connection: " + err.Error()
			}
			r := resp.(*kmsg.ApiVersionsResponse)
			return map[string]any{"ErrorCode": r.ErrorCode, "answerVersion": r.Version, "hasApiKeys": len(r.ApiKeys) > 0}
		}},
		{"ApiVersions", "v3 with an invalid client software name", func(e *Env) any {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "bad name!", "1.0"
			r := Do[*kmsg.ApiVersionsResponse](e, req)
			return map[string]any{"ErrorCode": r.ErrorCode, "hasApiKeys": len(r.ApiKeys) > 0}
		}},
		{"ApiVersions", "v5 (KIP-1242): bootstrapping, this broker, another cluster, another node, one of the two", func(e *Env) any {
			md := Do[*kmsg.MetadataResponse](e, metadataReq(false))
			if md.ClusterID == nil || len(md.Brokers) != 1 {
				e.fail("Metadata names cluster %v and %d brokers", md.ClusterID, len(md.Brokers))
			}
			cluster, node := *md.ClusterID, md.Brokers[0].NodeID
			other := "AAAAAAAAAAAAAAAAAAAAAA"
			out := map[string]any{}
			for _, c := range []struct {
				name    string
				cluster *string
				node    int32
			}{
				{"bootstrapping", nil, -1},
				{"this broker", &cluster, node},
				{"another cluster", &other, node},
				{"another node", &cluster, node + 1},
				{"cluster id only", &cluster, -1},
				{"node id only", nil, node},
			} {
				req := kmsg.NewPtrApiVersionsRequest()
				req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1.0"
				req.ClusterID, req.NodeID = c.cluster, c.node
				resp, err := e.TryV(req, 5)
				if err != nil {
					out[c.name] = "connection: " + err.Error()
					continue
				}
				r := resp.(*kmsg.ApiVersionsResponse)
				out[c.name] = map[string]any{"ErrorCode": r.ErrorCode, "answerVersion": r.Version, "hasApiKeys": len(r.ApiKeys) > 0}
			}
			return out
		}},

		// DescribeTopicPartitions
		{"DescribeTopicPartitions", "two topics and an unknown one", func(e *Env) any {
			e.CreateTopic("dtp-a", 3)
			e.CreateTopic("dtp-b", 2)
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			for _, n := range []string{"dtp-b", "dtp-a", "dtp-unknown"} {
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = n
				req.Topics = append(req.Topics, rt)
			}
			return Do[*kmsg.DescribeTopicPartitionsResponse](e, req)
		}},
		{"DescribeTopicPartitions", "paged two partitions at a time with the cursor", func(e *Env) any {
			e.CreateTopic("dtpp-a", 3)
			e.CreateTopic("dtpp-b", 2)
			var pages []any
			var cursor *kmsg.DescribeTopicPartitionsRequestCursor
			for range 4 {
				req := kmsg.NewPtrDescribeTopicPartitionsRequest()
				req.ResponsePartitionLimit = 2
				req.Cursor = cursor
				for _, n := range []string{"dtpp-a", "dtpp-b"} {
					rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
					rt.Topic = n
					req.Topics = append(req.Topics, rt)
				}
				resp := Do[*kmsg.DescribeTopicPartitionsResponse](e, req)
				var page []string
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						page = append(page, fmt.Sprintf("%s-%d", *t.Topic, p.Partition))
					}
				}
				next := "none"
				if resp.NextCursor != nil {
					next = fmt.Sprintf("%s-%d", resp.NextCursor.Topic, resp.NextCursor.Partition)
				}
				pages = append(pages, map[string]any{"partitions": page, "next": next})
				if resp.NextCursor == nil {
					break
				}
				cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
			}
			return pages
		}},

		// Metadata
		{"Metadata", "existing topic with 3 partitions", func(e *Env) any {
			e.CreateTopic("md-three", 3)
			return Do[*kmsg.MetadataResponse](e, metadataReq(false, "md-three"))
		}},
		{"Metadata", "unknown topic, auto-create off", func(e *Env) any {
			return Do[*kmsg.MetadataResponse](e, metadataReq(false, "md-unknown-off")).Topics
		}},
		{"Metadata", "unknown topic, auto-create on (first and later answer)", func(e *Env) any {
			first := Do[*kmsg.MetadataResponse](e, metadataReq(true, "md-auto")).Topics
			e.waitTopic("md-auto", 1)
			return map[string]any{"first": first, "later": Do[*kmsg.MetadataResponse](e, metadataReq(false, "md-auto")).Topics}
		}},
		{"Metadata", "invalid topic name with auto-create on", func(e *Env) any {
			return Do[*kmsg.MetadataResponse](e, metadataReq(true, "bad/name")).Topics
		}},
		{"Metadata", "unknown topic id", func(e *Env) any {
			req := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.TopicID = [16]byte{9, 9, 9}
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.MetadataResponse](e, req).Topics
		}},
		{"Metadata", "brokers and controller", func(e *Env) any {
			r := Do[*kmsg.MetadataResponse](e, metadataReq(false, "md-none-at-all"))
			return map[string]any{"brokers": r.Brokers, "controller": r.ControllerID, "ClusterID": r.ClusterID}
		}},

		// CreateTopics
		{"CreateTopics", "3 partitions: answer with configs", func(e *Env) any {
			r := Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("ct-ok", 3, 1))
			return r
		}},
		{"CreateTopics", "duplicate", func(e *Env) any {
			e.CreateTopic("ct-dup", 1)
			return Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("ct-dup", 1, 1)).Topics
		}},
		{"CreateTopics", "invalid names (., slash, 250 chars)", func(e *Env) any {
			req := createTopicsReq(".", 1, 1)
			req.Topics = append(req.Topics, createTopicsReq("a/b", 1, 1).Topics[0], createTopicsReq(strings.Repeat("n", 250), 1, 1).Topics[0])
			return Do[*kmsg.CreateTopicsResponse](e, req).Topics
		}},
		{"CreateTopics", "0 partitions and -1 (broker default)", func(e *Env) any {
			req := createTopicsReq("ct-zero", 0, 1)
			req.Topics = append(req.Topics, createTopicsReq("ct-default", -1, -1).Topics[0])
			return Do[*kmsg.CreateTopicsResponse](e, req).Topics
		}},
		{"CreateTopics", "replication factor 3 on one broker", func(e *Env) any {
			return Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("ct-rf3", 1, 3)).Topics
		}},
		{"CreateTopics", "unknown config key", func(e *Env) any {
			return Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("ct-unknown-cfg", 1, 1, "no.such.config", "1")).Topics
		}},
		{"CreateTopics", "bad config value", func(e *Env) any {
			return Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("ct-bad-cfg", 1, 1, "retention.ms", "soon")).Topics
		}},
		{"CreateTopics", "validate only", func(e *Env) any {
			req := createTopicsReq("ct-validate", 2, 1)
			req.ValidateOnly = true
			r := Do[*kmsg.CreateTopicsResponse](e, req)
			return map[string]any{"create": r.Topics, "metadata": Do[*kmsg.MetadataResponse](e, metadataReq(false, "ct-validate")).Topics}
		}},
		{"CreateTopics", "name colliding on . and _", func(e *Env) any {
			e.CreateTopic("ct.collide", 1)
			return Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("ct_collide", 1, 1)).Topics
		}},
		{"CreateTopics", "same topic twice in one request", func(e *Env) any {
			req := createTopicsReq("ct-twice", 1, 1)
			req.Topics = append(req.Topics, req.Topics[0])
			return Do[*kmsg.CreateTopicsResponse](e, req).Topics
		}},
		{"CreateTopics", "explicit replica assignment", func(e *Env) any {
			req := createTopicsReq("ct-assign", -1, -1)
			for p := int32(0); p < 2; p++ {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = p, []int32{1}
				req.Topics[0].ReplicaAssignment = append(req.Topics[0].ReplicaAssignment, a)
			}
			r := Do[*kmsg.CreateTopicsResponse](e, req)
			return map[string]any{"errors": r.Topics[0].ErrorCode, "partitions": r.Topics[0].NumPartitions, "rf": r.Topics[0].ReplicationFactor}
		}},

		// DeleteTopics
		{"DeleteTopics", "existing, then metadata", func(e *Env) any {
			e.CreateTopic("dt-basic", 1)
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TimeoutMillis = 10000
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = sp("dt-basic")
			req.Topics = append(req.Topics, t)
			r := Do[*kmsg.DeleteTopicsResponse](e, req)
			var md []kmsg.MetadataResponseTopic
			e.waitFor("topic gone", func() bool {
				md = Do[*kmsg.MetadataResponse](e, metadataReq(false, "dt-basic")).Topics
				return len(md) == 1 && md[0].ErrorCode != 0
			})
			return map[string]any{"delete": r.Topics, "metadata": md}
		}},
		{"DeleteTopics", "unknown name and unknown id", func(e *Env) any {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TimeoutMillis = 10000
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = sp("dt-unknown")
			req.Topics = append(req.Topics, t)
			r1 := Do[*kmsg.DeleteTopicsResponse](e, req)
			req2 := kmsg.NewPtrDeleteTopicsRequest()
			req2.TimeoutMillis = 10000
			t2 := kmsg.NewDeleteTopicsRequestTopic()
			t2.TopicID = [16]byte{7, 7}
			req2.Topics = append(req2.Topics, t2)
			r2 := Do[*kmsg.DeleteTopicsResponse](e, req2)
			return map[string]any{"name": r1.Topics, "id": r2.Topics}
		}},

		// Configs
		{"DescribeConfigs", "topic: chosen keys with an override", func(e *Env) any {
			e.CreateTopic("dc-topic", 1, "retention.ms", "123456")
			return describeConfigs(e, 2, "dc-topic", "retention.ms", "cleanup.policy", "max.message.bytes", "segment.bytes", "min.insync.replicas", "message.timestamp.type")
		}},
		{"DescribeConfigs", "unknown topic", func(e *Env) any {
			return describeConfigs(e, 2, "dc-no-such-topic", "retention.ms")
		}},
		{"DescribeConfigs", "broker 1: chosen keys", func(e *Env) any {
			return describeConfigs(e, 4, "1", "num.partitions", "auto.create.topics.enable", "log.retention.ms", "default.replication.factor", "node.id")
		}},
		{"DescribeConfigs", "broker of another id", func(e *Env) any {
			return describeConfigs(e, 4, "7", "num.partitions")
		}},
		{"DescribeConfigs", "topic: unknown key requested", func(e *Env) any {
			e.CreateTopic("dc-unknown-key", 1)
			return describeConfigs(e, 2, "dc-unknown-key", "no.such.key")
		}},
		{"AlterConfigs", "valid value, then describe", func(e *Env) any {
			e.CreateTopic("ac-ok", 1)
			r := alterConfigs(e, "ac-ok", "retention.ms", "999999")
			return map[string]any{"alter": r, "describe": describeConfigs(e, 2, "ac-ok", "retention.ms")}
		}},
		{"AlterConfigs", "bad value", func(e *Env) any {
			e.CreateTopic("ac-bad", 1)
			return alterConfigs(e, "ac-bad", "retention.ms", "forever")
		}},
		{"AlterConfigs", "unknown key", func(e *Env) any {
			e.CreateTopic("ac-unknown", 1)
			return alterConfigs(e, "ac-unknown", "no.such.config", "1")
		}},
		{"AlterConfigs", "unknown topic", func(e *Env) any {
			return alterConfigs(e, "ac-no-topic", "retention.ms", "1000")
		}},
		{"IncrementalAlterConfigs", "set, delete, append to a non-list", func(e *Env) any {
			e.CreateTopic("iac", 1)
			set := incAlter(e, "iac", "retention.ms", "5000", 0)
			del := incAlter(e, "iac", "retention.ms", "", 1)
			app := incAlter(e, "iac", "retention.ms", "1", 2)
			return map[string]any{"set": set, "delete": del, "append": app, "describe": describeConfigs(e, 2, "iac", "retention.ms")}
		}},
		{"IncrementalAlterConfigs", "append and subtract on cleanup.policy", func(e *Env) any {
			e.CreateTopic("iac-list", 1)
			a := incAlter(e, "iac-list", "cleanup.policy", "compact", 2)
			s := incAlter(e, "iac-list", "cleanup.policy", "delete", 3)
			// Kafka applies a config change through its metadata log: a
			// DescribeConfigs right after may still show the value before.
			e.waitFor("the subtract to apply", func() bool {
				r := describeConfigs(e, 2, "iac-list", "cleanup.policy")
				return len(r.Resources) == 1 && len(r.Resources[0].Configs) == 1 && r.Resources[0].Configs[0].Value != nil &&
					*r.Resources[0].Configs[0].Value != "delete,compact"
			})
			return map[string]any{"append": a, "subtract": s, "describe": describeConfigs(e, 2, "iac-list", "cleanup.policy")}
		}},
		{"IncrementalAlterConfigs", "bad value and unknown topic", func(e *Env) any {
			e.CreateTopic("iac-bad", 1)
			return map[string]any{"bad": incAlter(e, "iac-bad", "min.insync.replicas", "zero", 0), "unknown": incAlter(e, "iac-nope", "retention.ms", "1", 0)}
		}},
		{"IncrementalAlterConfigs", "broker: cluster-wide log.retention.ms, describe, delete", func(e *Env) any {
			e.CreateTopic("iac-broker", 1)
			set := incAlterBroker(e, "", "log.retention.ms", "3600000", 0)
			e.waitFor("the cluster-wide default to apply", func() bool {
				r := describeConfigsSyn(e, 4, "", "log.retention.ms")
				return len(r.Resources) == 1 && len(r.Resources[0].Configs) == 1
			})
			out := map[string]any{
				"set":     set,
				"default": describeConfigsSyn(e, 4, "", "log.retention.ms"),
				"broker":  describeConfigsSyn(e, 4, "1", "log.retention.ms"),
				"topic":   describeConfigsSyn(e, 2, "iac-broker", "retention.ms"),
			}
			out["delete"] = incAlterBroker(e, "", "log.retention.ms", "", 1)
			e.waitFor("the cluster-wide default to go", func() bool {
				r := describeConfigsSyn(e, 4, "", "log.retention.ms")
				return len(r.Resources) == 1 && len(r.Resources[0].Configs) == 0
			})
			return out
		}},
		{"IncrementalAlterConfigs", "broker: not dynamic, bad value, another broker, append to a non-list", func(e *Env) any {
			return map[string]any{
				"static":  incAlterBroker(e, "", "num.partitions", "3", 0),
				"hours":   incAlterBroker(e, "", "log.retention.hours", "1", 0),
				"bad":     incAlterBroker(e, "", "log.retention.ms", "forever", 0),
				"other":   incAlterBroker(e, "7", "log.retention.ms", "1000", 0),
				"notint":  incAlterBroker(e, "x", "log.retention.ms", "1000", 0),
				"append":  incAlterBroker(e, "1", "log.retention.ms", "1", 2),
				"threads": incAlterBroker(e, "", "num.io.threads", "100", 0),
			}
		}},

		// Partitions
		{"CreatePartitions", "1 to 3, then 3 to 2, then to 3 again, unknown topic", func(e *Env) any {
			e.CreateTopic("cp", 1)
			up := createPartitions(e, "cp", 3)
			down := createPartitions(e, "cp", 2)
			same := createPartitions(e, "cp", 3)
			unknown := createPartitions(e, "cp-nope", 2)
			return map[string]any{"up": up, "down": down, "same": same, "unknown": unknown}
		}},
		{"DescribeLogDirs", "one topic", func(e *Env) any {
			e.CreateTopic("dld", 2)
			e.MustProduce("dld", 0, batch(plainOpts(), vals("a", 2)...))
			req := kmsg.NewPtrDescribeLogDirsRequest()
			t := kmsg.NewDescribeLogDirsRequestTopic()
			t.Topic, t.Partitions = "dld", []int32{0, 1}
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.DescribeLogDirsResponse](e, req)
		}},
		{"ElectLeaders", "preferred election not needed, unknown partition", func(e *Env) any {
			e.CreateTopic("el", 1)
			req := kmsg.NewPtrElectLeadersRequest()
			req.TimeoutMillis = 10000
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = "el", []int32{0, 5}
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.ElectLeadersResponse](e, req)
		}},
		{"ListPartitionReassignments", "none ongoing", func(e *Env) any {
			e.CreateTopic("lpr", 1)
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			req.TimeoutMillis = 10000
			return Do[*kmsg.ListPartitionReassignmentsResponse](e, req)
		}},
		{"AlterPartitionReassignments", "to a broker that does not exist, unknown topic", func(e *Env) any {
			e.CreateTopic("apr", 1)
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			req.TimeoutMillis = 10000
			for _, name := range []string{"apr", "apr-nope"} {
				t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				t.Topic = name
				p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				p.Replicas = []int32{5}
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
			}
			return Do[*kmsg.AlterPartitionAssignmentsResponse](e, req)
		}},
		{"DescribeCluster", "brokers and controller", func(e *Env) any {
			return Do[*kmsg.DescribeClusterResponse](e, kmsg.NewPtrDescribeClusterRequest())
		}},

		// Security: the authorizer is on (CommonProps), no SASL
		{"DescribeACLs", "any (authorizer on)", func(e *Env) any {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = 1, 1, 1, 1 // ANY
			return Do[*kmsg.DescribeACLsResponse](e, req)
		}},
		{"CreateACLs", "one topic ACL (authorizer on)", func(e *Env) any {
			req := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = 2, "acl-topic", 3
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", 3, 3
			req.Creations = append(req.Creations, c)
			return Do[*kmsg.CreateACLsResponse](e, req)
		}},
		{"DeleteACLs", "any (authorizer on)", func(e *Env) any {
			req := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
			req.Filters = append(req.Filters, f)
			return Do[*kmsg.DeleteACLsResponse](e, req)
		}},
		{"DescribeUserSCRAMCredentials", "all users, and an unknown user", func(e *Env) any {
			all := Do[*kmsg.DescribeUserSCRAMCredentialsResponse](e, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = "nobody"
			req.Users = append(req.Users, u)
			return map[string]any{"all": all, "one": Do[*kmsg.DescribeUserSCRAMCredentialsResponse](e, req)}
		}},
		{"AlterUserSCRAMCredentials", "unknown mechanism, too few iterations, delete unknown", func(e *Env) any {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			for _, m := range []struct {
				name string
				mech int8
				it   int32
			}{{"u-mech", 9, 8192}, {"u-iter", 1, 10}} {
				up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				up.Name, up.Mechanism, up.Iterations = m.name, m.mech, m.it
				up.Salt, up.SaltedPassword = []byte("salt"), []byte("0123456789abcdef0123456789abcdef")
				req.Upsertions = append(req.Upsertions, up)
			}
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "u-none", 1
			req.Deletions = append(req.Deletions, d)
			return Do[*kmsg.AlterUserSCRAMCredentialsResponse](e, req)
		}},
		{"SASLHandshake", "on a PLAINTEXT listener", func(e *Env) any {
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.Mechanism = "PLAIN"
			r, err := e.Try(req)
			if err != nil {
				return "connection closed"
			}
			return r
		}},
	}
}

func describeConfigs(e *Env, rtype int8, name string, keys ...string) *kmsg.DescribeConfigsResponse {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceType(rtype)
	r.ResourceName = name
	r.ConfigNames = keys
	req.Resources = append(req.Resources, r)
	resp := Do[*kmsg.DescribeConfigsResponse](e, req)
	for i := range resp.Resources {
		for j := range resp.Resources[i].Configs {
			// Documentation text is not compared.
			resp.Resources[i].Configs[j].Documentation = nil
		}
	}
	return resp
}

func alterConfigs(e *Env, topic, key, value string) *kmsg.AlterConfigsResponse {
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, sp(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return Do[*kmsg.AlterConfigsResponse](e, req)
}

// describeConfigsSyn is describeConfigs with synonyms.
func describeConfigsSyn(e *Env, rtype int8, name string, keys ...string) *kmsg.DescribeConfigsResponse {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceType(rtype)
	r.ResourceName = name
	r.ConfigNames = keys
	req.Resources = append(req.Resources, r)
	resp := Do[*kmsg.DescribeConfigsResponse](e, req)
	for i := range resp.Resources {
		for j := range resp.Resources[i].Configs {
			resp.Resources[i].Configs[j].Documentation = nil
		}
	}
	return resp
}

// incAlterBroker is incAlter on a BROKER resource ("" for the cluster-wide
// defaults).
func incAlterBroker(e *Env, broker, key, value string, op int8) *kmsg.IncrementalAlterConfigsResponse {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, broker
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = key, kmsg.IncrementalAlterConfigOp(op)
	if op != 1 {
		c.Value = sp(value)
	}
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return Do[*kmsg.IncrementalAlterConfigsResponse](e, req)
}

func incAlter(e *Env, topic, key, value string, op int8) *kmsg.IncrementalAlterConfigsResponse {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = key, kmsg.IncrementalAlterConfigOp(op)
	if op != 1 {
		c.Value = sp(value)
	}
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return Do[*kmsg.IncrementalAlterConfigsResponse](e, req)
}

func createPartitions(e *Env, topic string, count int32) *kmsg.CreatePartitionsResponse {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = topic, count
	req.Topics = append(req.Topics, t)
	return Do[*kmsg.CreatePartitionsResponse](e, req)
}
