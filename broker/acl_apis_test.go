package broker

import (
	"fmt"
	"testing"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// grant is one ALLOW binding for the case's user.
type grant struct {
	rt   acl.ResourceType
	name string
	op   acl.Operation
}

// TestACL_EveryAPIChecksWhatKafkaChecks sends each API over a real SASL
// connection as a user of its own: with the ACLs of base only it gets
// Kafka's authorization error, with grant added as well the answer the
// request gets when authorized (its own errors, if any, are not
// authorization errors).
func TestACL_EveryAPIChecksWhatKafkaChecks(t *testing.T) {
	const topic = "t"
	s := kmsg.StringPtr
	var brokerName string // the broker's node id, known once it runs
	var topicID [16]byte  // topic's id, known once it is created
	shareFetch := func(group string, epoch int32) *kmsg.ShareFetchRequest {
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = s(group), s("member-"+group+"-0123456789"), epoch
		r.MaxBytes, r.MaxRecords, r.BatchSize = 1<<20, 100, 100
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = topicID
		ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		r.Topics = append(r.Topics, ft)
		return r
	}
	shareHeartbeat := func(group string) *kmsg.ShareGroupHeartbeatRequest {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.SubscribedTopicNames = group, "member-"+group+"-0123456789", []string{topic}
		return r
	}
	cases := []struct {
		name    string
		old     bool // client capped at Kafka 3.5's versions
		setup   func(t *testing.T, admin *kgo.Client)
		base    []grant
		grant   []grant
		req     func() kmsg.Request
		code    func(kmsg.Response) int16
		denied  int16
		allowed int16
	}{
		{
			name:  "FindCoordinator group: GROUP DESCRIBE",
			grant: []grant{{acl.Group, "g-fc", acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKey, r.CoordinatorKeys = "g-fc", []string{"g-fc"}
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:  "FindCoordinator transaction: TRANSACTIONAL_ID DESCRIBE",
			grant: []grant{{acl.TransactionalID, "tx-fc", acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = 1, "tx-fc", []string{"tx-fc"}
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed.Code,
		},
		{
			name:  "JoinGroup: GROUP READ",
			grant: []grant{{acl.Group, "g-join", acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrJoinGroupRequest()
				r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "g-join", "consumer", 10000, 10000
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name, p.Metadata = "range", []byte{0, 0}
				r.Protocols = append(r.Protocols, p)
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.MemberIDRequired.Code,
		},
		{
			name:  "SyncGroup: GROUP READ",
			grant: []grant{{acl.Group, "g-sync", acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrSyncGroupRequest()
				r.Group, r.MemberID, r.ProtocolType, r.Protocol = "g-sync", "m", s("consumer"), s("range")
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.UnknownMemberID.Code,
		},
		{
			name:  "Heartbeat: GROUP READ",
			grant: []grant{{acl.Group, "g-hb", acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrHeartbeatRequest()
				r.Group, r.MemberID = "g-hb", "m"
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.UnknownMemberID.Code,
		},
		{
			name:  "LeaveGroup: GROUP READ",
			grant: []grant{{acl.Group, "g-leave", acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrLeaveGroupRequest()
				r.Group = "g-leave"
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = "m"
				r.Members = append(r.Members, m)
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.UnknownMemberID.Code,
		},
		{
			name:   "OffsetCommit group: GROUP READ",
			grant:  []grant{{acl.Group, "g-oc", acl.Read}, {acl.Topic, topic, acl.Read}},
			req:    func() kmsg.Request { return offsetCommitReq("g-oc", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:   "OffsetCommit topic: TOPIC READ",
			base:   []grant{{acl.Group, "g-oc2", acl.Read}},
			grant:  []grant{{acl.Topic, topic, acl.Read}},
			req:    func() kmsg.Request { return offsetCommitReq("g-oc2", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:   "OffsetFetch group: GROUP DESCRIBE",
			grant:  []grant{{acl.Group, "g-of", acl.Describe}},
			req:    func() kmsg.Request { return offsetFetchReq("g-of", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:  "OffsetFetch topic: TOPIC DESCRIBE",
			base:  []grant{{acl.Group, "g-of2", acl.Describe}},
			grant: []grant{{acl.Topic, topic, acl.Describe}},
			req:   func() kmsg.Request { return offsetFetchReq("g-of2", topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions[0].ErrorCode
			},
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:   "OffsetDelete group: GROUP DELETE",
			setup:  func(t *testing.T, admin *kgo.Client) { commitAs(t, admin, "g-od", topic) },
			grant:  []grant{{acl.Group, "g-od", acl.Delete}, {acl.Topic, topic, acl.Read}},
			req:    func() kmsg.Request { return offsetDeleteReq("g-od", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:   "OffsetDelete topic: TOPIC READ",
			setup:  func(t *testing.T, admin *kgo.Client) { commitAs(t, admin, "g-od2", topic) },
			base:   []grant{{acl.Group, "g-od2", acl.Delete}},
			grant:  []grant{{acl.Topic, topic, acl.Read}},
			req:    func() kmsg.Request { return offsetDeleteReq("g-od2", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "DescribeGroups: GROUP DESCRIBE",
			setup: func(t *testing.T, admin *kgo.Client) { commitAs(t, admin, "g-dg", topic) },
			grant: []grant{{acl.Group, "g-dg", acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeGroupsRequest()
				r.Groups = []string{"g-dg"}
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:  "ListGroups: only the groups the client may describe",
			setup: func(t *testing.T, admin *kgo.Client) { commitAs(t, admin, "g-lg", topic) },
			grant: []grant{{acl.Group, "g-lg", acl.Describe}},
			req:   func() kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			code: func(r kmsg.Response) int16 {
				for _, g := range r.(*kmsg.ListGroupsResponse).Groups {
					if g.Group == "g-lg" {
						return 0
					}
				}
				return kerr.GroupAuthorizationFailed.Code // not listed
			},
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:  "ListGroups: every group with CLUSTER DESCRIBE",
			setup: func(t *testing.T, admin *kgo.Client) { commitAs(t, admin, "g-lg2", topic) },
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Describe}},
			req:   func() kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			code: func(r kmsg.Response) int16 {
				for _, g := range r.(*kmsg.ListGroupsResponse).Groups {
					if g.Group == "g-lg2" {
						return 0
					}
				}
				return kerr.GroupAuthorizationFailed.Code // not listed
			},
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:  "DeleteGroups: GROUP DELETE",
			setup: func(t *testing.T, admin *kgo.Client) { commitAs(t, admin, "g-del", topic) },
			grant: []grant{{acl.Group, "g-del", acl.Delete}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Groups = []string{"g-del"}
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:   "ConsumerGroupHeartbeat group: GROUP READ",
			grant:  []grant{{acl.Group, "g-cgh", acl.Read}, {acl.Topic, topic, acl.Describe}},
			req:    func() kmsg.Request { return consumerHeartbeatReq("g-cgh", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:   "ConsumerGroupHeartbeat subscription: TOPIC DESCRIBE",
			base:   []grant{{acl.Group, "g-cgh2", acl.Read}},
			grant:  []grant{{acl.Topic, topic, acl.Describe}},
			req:    func() kmsg.Request { return consumerHeartbeatReq("g-cgh2", topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:   "ConsumerGroupDescribe group: GROUP DESCRIBE",
			setup:  func(t *testing.T, admin *kgo.Client) { joinConsumerGroup(t, admin, "g-cgd", topic) },
			grant:  []grant{{acl.Group, "g-cgd", acl.Describe}, {acl.Topic, topic, acl.Describe}},
			req:    func() kmsg.Request { return consumerDescribeReq("g-cgd") },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed.Code,
		},
		{
			name:   "ConsumerGroupDescribe assigned topics: TOPIC DESCRIBE",
			setup:  func(t *testing.T, admin *kgo.Client) { joinConsumerGroup(t, admin, "g-cgd2", topic) },
			base:   []grant{{acl.Group, "g-cgd2", acl.Describe}},
			grant:  []grant{{acl.Topic, topic, acl.Describe}},
			req:    func() kmsg.Request { return consumerDescribeReq("g-cgd2") },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "InitProducerId transactional: TRANSACTIONAL_ID WRITE",
			grant: []grant{{acl.TransactionalID, "tx-init", acl.Write}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID, r.TransactionTimeoutMillis = s("tx-init"), 10000
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed.Code,
		},
		{
			name:   "InitProducerId idempotent: CLUSTER IDEMPOTENT_WRITE",
			grant:  []grant{{acl.Cluster, acl.ClusterName, acl.IdempotentWrite}},
			req:    func() kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:  "AddPartitionsToTxn v3 transactional id: TRANSACTIONAL_ID WRITE",
			old:   true,
			grant: []grant{{acl.TransactionalID, "tx-apt", acl.Write}, {acl.Topic, topic, acl.Write}},
			req:   func() kmsg.Request { return addPartitionsReq("tx-apt", topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.TransactionalIDAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "AddPartitionsToTxn v3 topic: TOPIC WRITE",
			old:   true,
			base:  []grant{{acl.TransactionalID, "tx-apt2", acl.Write}},
			grant: []grant{{acl.Topic, topic, acl.Write}},
			req:   func() kmsg.Request { return addPartitionsReq("tx-apt2", topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.TopicAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "AddPartitionsToTxn v4+ (brokers): CLUSTER CLUSTER_ACTION",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.ClusterAction}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrAddPartitionsToTxnRequest()
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = "tx-apt4", 1, true
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic, tt.Partitions = topic, []int32{0}
				tx.Topics = append(tx.Topics, tt)
				r.Transactions = append(r.Transactions, tx)
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:    "AddOffsetsToTxn transactional id: TRANSACTIONAL_ID WRITE",
			grant:   []grant{{acl.TransactionalID, "tx-aot", acl.Write}, {acl.Group, "g-aot", acl.Read}},
			req:     func() kmsg.Request { return addOffsetsReq("tx-aot", "g-aot") },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode },
			denied:  kerr.TransactionalIDAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:    "AddOffsetsToTxn group: GROUP READ",
			base:    []grant{{acl.TransactionalID, "tx-aot2", acl.Write}},
			grant:   []grant{{acl.Group, "g-aot2", acl.Read}},
			req:     func() kmsg.Request { return addOffsetsReq("tx-aot2", "g-aot2") },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "EndTxn: TRANSACTIONAL_ID WRITE",
			grant: []grant{{acl.TransactionalID, "tx-end", acl.Write}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID = "tx-end", 1
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode },
			denied:  kerr.TransactionalIDAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "TxnOffsetCommit transactional id: TRANSACTIONAL_ID WRITE",
			grant: []grant{{acl.TransactionalID, "tx-toc", acl.Write}, {acl.Group, "g-toc", acl.Read}, {acl.Topic, topic, acl.Read}},
			req:   func() kmsg.Request { return txnOffsetCommitReq("tx-toc", "g-toc", topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.TransactionalIDAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "TxnOffsetCommit group: GROUP READ",
			base:  []grant{{acl.TransactionalID, "tx-toc2", acl.Write}},
			grant: []grant{{acl.Group, "g-toc2", acl.Read}, {acl.Topic, topic, acl.Read}},
			req:   func() kmsg.Request { return txnOffsetCommitReq("tx-toc2", "g-toc2", topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "TxnOffsetCommit topic: TOPIC READ",
			base:  []grant{{acl.TransactionalID, "tx-toc3", acl.Write}, {acl.Group, "g-toc3", acl.Read}},
			grant: []grant{{acl.Topic, topic, acl.Read}},
			req:   func() kmsg.Request { return txnOffsetCommitReq("tx-toc3", "g-toc3", topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.TopicAuthorizationFailed.Code,
			allowed: kerr.InvalidProducerIDMapping.Code,
		},
		{
			name:  "DescribeTransactions: TRANSACTIONAL_ID DESCRIBE",
			grant: []grant{{acl.TransactionalID, "tx-dt", acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.TransactionalIDs = []string{"tx-dt"}
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
			},
			denied:  kerr.TransactionalIDAuthorizationFailed.Code,
			allowed: kerr.TransactionalIDNotFound.Code,
		},
		{
			name:  "ListTransactions: only the transactional ids the client may describe",
			setup: func(t *testing.T, admin *kgo.Client) { initTxn(t, admin, "tx-lt") },
			grant: []grant{{acl.TransactionalID, "tx-lt", acl.Describe}},
			req:   func() kmsg.Request { return kmsg.NewPtrListTransactionsRequest() },
			code: func(r kmsg.Response) int16 {
				for _, s := range r.(*kmsg.ListTransactionsResponse).TransactionStates {
					if s.TransactionalID == "tx-lt" {
						return 0
					}
				}
				return kerr.TransactionalIDAuthorizationFailed.Code // not listed
			},
			denied: kerr.TransactionalIDAuthorizationFailed.Code,
		},
		{
			name:  "DescribeTopicPartitions: TOPIC DESCRIBE",
			grant: []grant{{acl.Topic, topic, acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeTopicPartitionsRequest()
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = topic
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode
			},
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "DescribeProducers: TOPIC READ",
			grant: []grant{{acl.Topic, topic, acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeProducersRequest()
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic, rt.Partitions = topic, []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "WriteTxnMarkers: CLUSTER CLUSTER_ACTION",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.ClusterAction}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID = 999
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = topic, []int32{0}
				m.Topics = append(m.Topics, mt)
				r.Markers = append(r.Markers, m)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			},
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:   "DescribeConfigs topic: TOPIC DESCRIBE_CONFIGS",
			grant:  []grant{{acl.Topic, topic, acl.DescribeConfigs}},
			req:    func() kmsg.Request { return describeConfigsReq(kmsg.ConfigResourceTypeTopic, topic) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:   "DescribeConfigs broker: CLUSTER DESCRIBE_CONFIGS",
			grant:  []grant{{acl.Cluster, acl.ClusterName, acl.DescribeConfigs}},
			req:    func() kmsg.Request { return describeConfigsReq(kmsg.ConfigResourceTypeBroker, brokerName) },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:  "AlterConfigs topic: TOPIC ALTER_CONFIGS",
			grant: []grant{{acl.Topic, topic, acl.AlterConfigs}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterConfigsRequest()
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "retention.ms", s("86400000")
				rr.Configs = append(rr.Configs, c)
				r.Resources = append(r.Resources, rr)
				r.ValidateOnly = true
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "IncrementalAlterConfigs topic: TOPIC ALTER_CONFIGS",
			grant: []grant{{acl.Topic, topic, acl.AlterConfigs}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrIncrementalAlterConfigsRequest()
				rr := kmsg.NewIncrementalAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "retention.ms", s("86400000")
				rr.Configs = append(rr.Configs, c)
				r.Resources = append(r.Resources, rr)
				r.ValidateOnly = true
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "CreatePartitions: TOPIC ALTER",
			grant: []grant{{acl.Topic, topic, acl.Alter}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrCreatePartitionsRequest()
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = topic, 2
				r.Topics = append(r.Topics, rt)
				r.ValidateOnly = true
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "DeleteRecords: TOPIC DELETE",
			grant: []grant{{acl.Topic, topic, acl.Delete}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDeleteRecordsRequest()
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = topic
				p := kmsg.NewDeleteRecordsRequestTopicPartition()
				p.Offset = 0
				rt.Partitions = append(rt.Partitions, p)
				r.Topics = append(r.Topics, rt)
				r.TimeoutMillis = 5000
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "ElectLeaders: CLUSTER ALTER",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrElectLeadersRequest()
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = topic, []int32{0}
				r.Topics = append(r.Topics, rt)
				r.TimeoutMillis = 5000
				return r
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:   "AlterPartitionReassignments: CLUSTER ALTER",
			grant:  []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req:    func() kmsg.Request { return kmsg.NewPtrAlterPartitionAssignmentsRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:  "StreamsGroupTopologyDescriptionUpdate: GROUP READ",
			grant: []grant{{acl.Group, "g-stdu", acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
				r.Group, r.MemberID = "g-stdu", "m"
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.UnsupportedVersion.Code, // no topology description plugin
		},
		{
			name:  "UnregisterBroker: CLUSTER ALTER",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrUnregisterBrokerRequest()
				r.BrokerID = 77
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.UnregisterBrokerResponse).ErrorCode },
			denied:  kerr.ClusterAuthorizationFailed.Code,
			allowed: kerr.BrokerIDNotRegistered.Code,
		},
		{
			name:    "AddRaftVoter: CLUSTER ALTER",
			grant:   []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req:     func() kmsg.Request { return kmsg.NewPtrAddRaftVoterRequest() },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.AddRaftVoterResponse).ErrorCode },
			denied:  kerr.ClusterAuthorizationFailed.Code,
			allowed: kerr.InvalidRequest.Code,
		},
		{
			name:    "RemoveRaftVoter: CLUSTER ALTER",
			grant:   []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req:     func() kmsg.Request { return kmsg.NewPtrRemoveRaftVoterRequest() },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.RemoveRaftVoterResponse).ErrorCode },
			denied:  kerr.ClusterAuthorizationFailed.Code,
			allowed: kerr.InvalidRequest.Code,
		},
		{
			name:  "UnregisterController: CLUSTER ALTER",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrUnregisterControllerRequest()
				r.ControllerID = 77
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.UnregisterControllerResponse).ErrorCode },
			denied:  kerr.ClusterAuthorizationFailed.Code,
			allowed: kerr.ControllerIDNotRegistered.Code,
		},
		{
			name:   "ListPartitionReassignments: CLUSTER DESCRIBE",
			grant:  []grant{{acl.Cluster, acl.ClusterName, acl.Describe}},
			req:    func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:   "DescribeLogDirs: CLUSTER DESCRIBE",
			grant:  []grant{{acl.Cluster, acl.ClusterName, acl.Describe}},
			req:    func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:  "AlterReplicaLogDirs: CLUSTER ALTER",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = "/no-such-log-dir"
				dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				dt.Topic, dt.Partitions = topic, []int32{0}
				d.Topics = append(d.Topics, dt)
				r.Dirs = append(r.Dirs, d)
				return r
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.ClusterAuthorizationFailed.Code,
			allowed: kerr.LogDirNotFound.Code,
		},
		{
			name:  "DescribeCluster authorized operations: CLUSTER DESCRIBE",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeClusterRequest()
				r.IncludeClusterAuthorizedOperations, r.EndpointType = true, 1
				return r
			},
			code: func(r kmsg.Response) int16 {
				if ops := r.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; ops != acl.Bits(acl.Describe) {
					return kerr.ClusterAuthorizationFailed.Code // ops 0
				}
				return 0
			},
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:  "DescribeUserScramCredentials: CLUSTER DESCRIBE",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Describe}},
			req: func() kmsg.Request {
				return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			},
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed.Code,
		},
		{
			name:  "AlterUserScramCredentials: CLUSTER ALTER",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.Alter}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name, d.Mechanism = "ghost", 1
				r.Deletions = append(r.Deletions, d)
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode },
			denied:  kerr.ClusterAuthorizationFailed.Code,
			allowed: kerr.ResourceNotFound.Code,
		},
		{
			name:  "OffsetForLeaderEpoch: TOPIC DESCRIBE",
			grant: []grant{{acl.Topic, topic, acl.Describe}},
			req:   func() kmsg.Request { return offsetForLeaderEpochReq(topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:  "OffsetForLeaderEpoch: or CLUSTER CLUSTER_ACTION",
			grant: []grant{{acl.Cluster, acl.ClusterName, acl.ClusterAction}},
			req:   func() kmsg.Request { return offsetForLeaderEpochReq(topic) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied: kerr.TopicAuthorizationFailed.Code,
		},
		{
			name:    "ShareGroupHeartbeat group: GROUP READ",
			base:    []grant{{acl.Topic, topic, acl.Describe}},
			grant:   []grant{{acl.Group, "sg-hb", acl.Read}},
			req:     func() kmsg.Request { return shareHeartbeat("sg-hb") },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: 0,
		},
		{
			name:    "ShareGroupHeartbeat topic: TOPIC DESCRIBE",
			base:    []grant{{acl.Group, "sg-hb2", acl.Read}},
			grant:   []grant{{acl.Topic, topic, acl.Describe}},
			req:     func() kmsg.Request { return shareHeartbeat("sg-hb2") },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode },
			denied:  kerr.TopicAuthorizationFailed.Code,
			allowed: 0,
		},
		{
			name:  "ShareGroupDescribe: GROUP DESCRIBE",
			grant: []grant{{acl.Group, "sg-desc", acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrShareGroupDescribeRequest()
				r.GroupIDs = []string{"sg-desc"}
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.GroupIDNotFound.Code,
		},
		{
			name:    "ShareFetch group: GROUP READ",
			base:    []grant{{acl.Topic, topic, acl.Read}},
			grant:   []grant{{acl.Group, "sg-f", acl.Read}},
			req:     func() kmsg.Request { return shareFetch("sg-f", 0) },
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.ShareFetchResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: 0,
		},
		{
			name:  "ShareFetch topic: TOPIC READ",
			base:  []grant{{acl.Group, "sg-f2", acl.Read}},
			grant: []grant{{acl.Topic, topic, acl.Read}},
			req:   func() kmsg.Request { return shareFetch("sg-f2", 0) },
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.ShareFetchResponse).Topics[0].Partitions[0].ErrorCode
			},
			denied:  kerr.TopicAuthorizationFailed.Code,
			allowed: 0,
		},
		{
			name:  "ShareAcknowledge group: GROUP READ",
			base:  []grant{{acl.Topic, topic, acl.Read}},
			grant: []grant{{acl.Group, "sg-ack", acl.Read}},
			req: func() kmsg.Request {
				f := shareFetch("sg-ack", 1)
				r := kmsg.NewPtrShareAcknowledgeRequest()
				r.GroupID, r.MemberID, r.ShareSessionEpoch = f.GroupID, f.MemberID, 1
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.ShareAcknowledgeResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.ShareSessionNotFound.Code,
		},
		{
			name:  "DescribeShareGroupOffsets: GROUP DESCRIBE",
			grant: []grant{{acl.Group, "sg-do", acl.Describe}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
				g.GroupID = "sg-do"
				r.Groups = append(r.Groups, g)
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.GroupIDNotFound.Code,
		},
		{
			name:  "AlterShareGroupOffsets: GROUP READ",
			base:  []grant{{acl.Topic, topic, acl.Read}},
			grant: []grant{{acl.Group, "sg-ao", acl.Read}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
				r.GroupID = "sg-ao"
				rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
				rt.Topic = topic
				rt.Partitions = append(rt.Partitions, kmsg.NewAlterShareGroupOffsetsRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: 0, // the handler creates the group (coordinator/share.go)
		},
		{
			name:  "DeleteShareGroupOffsets: GROUP DELETE",
			base:  []grant{{acl.Topic, topic, acl.Read}},
			grant: []grant{{acl.Group, "sg-dl", acl.Delete}},
			req: func() kmsg.Request {
				r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				r.GroupID = "sg-dl"
				rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
				rt.Topic = topic
				r.Topics = append(r.Topics, rt)
				return r
			},
			code:    func(r kmsg.Response) int16 { return r.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode },
			denied:  kerr.GroupAuthorizationFailed.Code,
			allowed: kerr.GroupIDNotFound.Code,
		},
	}

	dir := t.TempDir()
	users := []string{"admin"}
	for i := range cases {
		users = append(users, fmt.Sprintf("u%d", i))
	}
	for _, u := range users {
		if err := AddUser(dir, u, config.ScramSHA256, u+"-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := startBroker(t, dir, map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"authorizer.class.name":   "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":             "User:admin",
	})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()
	brokerName = fmt.Sprint(b.nodeID)
	admin := userClient(t, addr, "admin")
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = topic, 1, 1
	ct.Topics = append(ct.Topics, ctt)
	if resp, err := ct.RequestWith(testCtx(t), admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	} else {
		topicID = resp.Topics[0].TopicID
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			user := fmt.Sprintf("u%d", i)
			principal := "User:" + user
			if tc.setup != nil {
				tc.setup(t, admin)
			}
			for _, a := range tc.base {
				createACL(t, admin, a.rt, a.name, acl.Literal, principal, a.op, acl.Allow)
			}
			var opts []kgo.Opt
			if tc.old {
				opts = append(opts, kgo.MaxVersions(kversion.V3_5_0()))
			}
			cl := userClient(t, addr, user, opts...)
			send := func() int16 {
				t.Helper()
				resp, err := cl.Broker(int(b.nodeID)).Request(testCtx(t), tc.req())
				if err != nil {
					t.Fatalf("request: %v", err)
				}
				return tc.code(resp)
			}
			if got := send(); got != tc.denied {
				t.Errorf("without the ACL: %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.denied))
			}
			for _, a := range tc.grant {
				createACL(t, admin, a.rt, a.name, acl.Literal, principal, a.op, acl.Allow)
			}
			if got := send(); got != tc.allowed {
				t.Errorf("with the ACL: %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.allowed))
			}
		})
	}
}

func offsetCommitReq(group, topic string) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Group, r.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = 0
	rt.Partitions = append(rt.Partitions, p)
	r.Topics = append(r.Topics, rt)
	return r
}

// commitAs commits offset 0 of topic for group, which creates the group.
func commitAs(t *testing.T, cl *kgo.Client, group, topic string) {
	t.Helper()
	resp, err := offsetCommitReq(group, topic).RequestWith(testCtx(t), cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit for %s: %v %+v", group, err, resp)
	}
}

func offsetFetchReq(group, topic string) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Group = group
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = topic, []int32{0}
	g.Topics = append(g.Topics, gt)
	r.Groups = append(r.Groups, g)
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = topic, []int32{0}
	r.Topics = append(r.Topics, ot)
	return r
}

func offsetDeleteReq(group, topic string) *kmsg.OffsetDeleteRequest {
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = group
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
	r.Topics = append(r.Topics, rt)
	return r
}

func consumerHeartbeatReq(group, topic string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID, r.RebalanceTimeoutMillis = group, "member-"+group, 30000
	r.SubscribedTopicNames = []string{topic}
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return r
}

// joinConsumerGroup makes cl a member of a KIP-848 group subscribed to
// topic, with the topic assigned.
func joinConsumerGroup(t *testing.T, cl *kgo.Client, group, topic string) {
	t.Helper()
	resp, err := consumerHeartbeatReq(group, topic).RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join %s: %v %+v", group, err, resp)
	}
}

func consumerDescribeReq(group string) *kmsg.ConsumerGroupDescribeRequest {
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Groups = []string{group}
	return r
}

func addPartitionsReq(txnID, topic string) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.TransactionalID, r.ProducerID = txnID, 12345
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	r.Topics = append(r.Topics, rt)
	return r
}

func addOffsetsReq(txnID, group string) *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.TransactionalID, r.ProducerID, r.Group = txnID, 12345, group
	return r
}

func txnOffsetCommitReq(txnID, group, topic string) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.TransactionalID, r.Group, r.ProducerID = txnID, group, 12345
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	r.Topics = append(r.Topics, rt)
	return r
}

// initTxn gives cl a producer id for transactional id txnID.
func initTxn(t *testing.T, cl *kgo.Client, txnID string) {
	t.Helper()
	r := kmsg.NewPtrInitProducerIDRequest()
	r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 10000
	resp, err := r.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("init %s: %v %+v", txnID, err, resp)
	}
}

func describeConfigsReq(rt kmsg.ConfigResourceType, name string) *kmsg.DescribeConfigsRequest {
	r := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = rt, name
	r.Resources = append(r.Resources, rr)
	return r
}

func offsetForLeaderEpochReq(topic string) *kmsg.OffsetForLeaderEpochRequest {
	r := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.CurrentLeaderEpoch, p.LeaderEpoch = -1, 0
	rt.Partitions = append(rt.Partitions, p)
	r.Topics = append(r.Topics, rt)
	return r
}
