package broker

// The authorizer's checks of the group, transaction and admin APIs, as
// Apache Kafka's KafkaApis (and its ControllerApis, for the APIs a KRaft
// broker forwards) makes them. They run before a request is routed to its
// coordinator, as in Kafka, where a client refused gets its authorization
// error rather than NOT_COORDINATOR. With no authorizer none runs.
//
// A check either refuses the whole request (its answer is Kafka's error
// response) or takes the refused parts out of the request (topics, groups,
// transactional ids, config resources) and returns a merge that adds their
// answers to the handler's response. Produce, Fetch, ListOffsets, Metadata,
// CreateTopics, DeleteTopics, InitProducerId, OffsetForLeaderEpoch, the ACL
// APIs, FindCoordinator and DescribeCluster check inside their handlers
// (acl_checks.go). The coverage table is in docs/security.md.

import (
	"reflect"
	"slices"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclCheck is one API's check: a non-nil deny answers the request instead
// of its handler; a non-nil merge completes the handler's response.
type aclCheck func(b *Broker, r *request) (deny kmsg.Response, merge func(kmsg.Response))

var aclChecks = map[kmsg.Key]aclCheck{
	kmsg.JoinGroup:                             checkJoinGroup,
	kmsg.SyncGroup:                             checkSyncGroup,
	kmsg.Heartbeat:                             checkHeartbeat,
	kmsg.LeaveGroup:                            checkLeaveGroup,
	kmsg.OffsetCommit:                          checkOffsetCommit,
	kmsg.OffsetFetch:                           checkOffsetFetch,
	kmsg.OffsetDelete:                          checkOffsetDelete,
	kmsg.DescribeGroups:                        checkDescribeGroups,
	kmsg.ListGroups:                            checkListGroups,
	kmsg.DeleteGroups:                          checkDeleteGroups,
	kmsg.ConsumerGroupHeartbeat:                checkConsumerGroupHeartbeat,
	kmsg.ConsumerGroupDescribe:                 checkConsumerGroupDescribe,
	kmsg.StreamsGroupHeartbeat:                 checkStreamsGroupHeartbeat,
	kmsg.StreamsGroupDescribe:                  checkDescribeGroups,
	kmsg.StreamsGroupTopologyDescriptionUpdate: checkStreamsTopologyDescriptionUpdate,
	kmsg.AddPartitionsToTxn:                    checkAddPartitionsToTxn,
	kmsg.AddOffsetsToTxn:                       checkAddOffsetsToTxn,
	kmsg.EndTxn:                                checkEndTxn,
	kmsg.TxnOffsetCommit:                       checkTxnOffsetCommit,
	kmsg.DescribeTransactions:                  checkDescribeTransactions,
	kmsg.ListTransactions:                      checkListTransactions,
	kmsg.DescribeProducers:                     checkDescribeProducers,
	kmsg.WriteTxnMarkers:                       checkWriteTxnMarkers,
	kmsg.DescribeConfigs:                       checkDescribeConfigs,
	kmsg.AlterConfigs:                          checkAlterConfigs,
	kmsg.IncrementalAlterConfigs:               checkAlterConfigs,
	kmsg.CreatePartitions:                      checkTopics(acl.Alter, "Topics"),
	kmsg.DeleteRecords:                         checkTopics(acl.Delete, "Topics"),
	kmsg.ElectLeaders:                          checkCluster(acl.Alter),
	kmsg.AlterPartitionAssignments:             checkCluster(acl.Alter),
	kmsg.ListPartitionReassignments:            checkCluster(acl.Describe),
	kmsg.DescribeQuorum:                        checkCluster(acl.Describe),
	kmsg.UpdateFeatures:                        checkCluster(acl.Alter),
	kmsg.UnregisterBroker:                      checkCluster(acl.Alter),
	kmsg.AddRaftVoter:                          checkCluster(acl.Alter),
	kmsg.RemoveRaftVoter:                       checkCluster(acl.Alter),
	kmsg.UnregisterController:                  checkCluster(acl.Alter),
	kmsg.ListConfigResources:                   checkCluster(acl.DescribeConfigs),
	kmsg.DescribeLogDirs:                       checkDescribeLogDirs,
	kmsg.AlterReplicaLogDirs:                   checkAlterReplicaLogDirs,
	kmsg.DescribeUserSCRAMCredentials:          checkDescribeUserScram,
	kmsg.AlterUserSCRAMCredentials:             checkAlterUserScram,
}

// authorizeRequest runs the request's check, if it has one.
func (b *Broker) authorizeRequest(r *request) (kmsg.Response, func(kmsg.Response)) {
	if !b.acl.Enabled() {
		return nil, nil
	}
	chk := aclChecks[kmsg.Key(r.hdr.Key)]
	if chk == nil {
		return nil, nil
	}
	return chk(b, r)
}

// groupOps are the KIP-430 operations on a group.
var groupOps = []acl.Operation{acl.Read, acl.Delete, acl.Describe}

// Whole-request answers.

// denyAll is Kafka's getErrorResponse for a request refused whole: the
// request's lists mirrored, with code in each innermost answer and in the
// top-level error code where the response has one.
func (b *Broker) denyAll(r *request, code int16) kmsg.Response {
	resp := errorResponse(r.msg, code, b.topicNameByID)
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
	return resp
}

// answerOnly is the answer to a request all of whose parts were refused:
// the empty response completed by merge, without calling the handler.
func answerOnly(r *request, merge func(kmsg.Response)) kmsg.Response {
	resp := r.msg.ResponseKind()
	resp.SetVersion(r.msg.GetVersion())
	merge(resp)
	return resp
}

// Refusing parts of a request.

// elemName is the name a list element of a request is authorized by: the
// element itself when it is a string, else its topic, group, name or
// resource name.
func elemName(e reflect.Value) string {
	if e.Kind() == reflect.String {
		return e.String()
	}
	for _, n := range []string{"Topic", "Group", "Name", "ResourceName", "TransactionalID"} {
		if f := e.FieldByName(n); f.IsValid() {
			if f.Kind() == reflect.String {
				return f.String()
			}
			if f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String {
				return f.Elem().String()
			}
		}
	}
	return ""
}

// split takes out of the list field of the struct at in the elements for
// which code returns non-zero, and returns an appender that adds an answer
// for each to the matching list of a response struct (field out, or in's
// alias), mirrored from the element with its code. all reports whether the
// list was not empty and every element was taken out.
func (b *Broker) split(in reflect.Value, field, out string, code func(e reflect.Value) int16) (appendTo func(resp reflect.Value), all bool) {
	list := in.FieldByName(field)
	if !list.IsValid() || list.Kind() != reflect.Slice || list.Len() == 0 {
		return nil, false
	}
	kept := reflect.MakeSlice(list.Type(), 0, list.Len())
	type refused struct {
		e    reflect.Value
		code int16
	}
	var denied []refused
	for i := range list.Len() {
		e := list.Index(i)
		if c := code(e); c != 0 {
			denied = append(denied, refused{e, c})
		} else {
			kept = reflect.Append(kept, e)
		}
	}
	if len(denied) == 0 {
		return nil, false
	}
	list.Set(kept)
	return func(resp reflect.Value) {
		dst := resp.FieldByName(out)
		if !dst.IsValid() || dst.Kind() != reflect.Slice {
			return
		}
		for _, d := range denied {
			a := reflect.New(dst.Type().Elem()).Elem()
			if d.e.Kind() == reflect.Struct {
				mirror(d.e, a, d.code, b.topicNameByID, "", 1)
			} else {
				mirror(reflect.ValueOf(struct{}{}), a, d.code, b.topicNameByID, "", 1)
				setIdentity(a, d.e)
				setCode(a, d.code, "")
			}
			dst.Set(reflect.Append(dst, a))
		}
	}, kept.Len() == 0
}

// splitRequest is split on the request's top-level list: the request's
// whole answer when every element was refused, else the merge.
func (b *Broker) splitRequest(r *request, field, out string, code func(e reflect.Value) int16) (kmsg.Response, func(kmsg.Response)) {
	add, all := b.split(reflect.ValueOf(r.msg).Elem(), field, out, code)
	if add == nil {
		return nil, nil
	}
	merge := func(resp kmsg.Response) { add(reflect.ValueOf(resp).Elem()) }
	if all {
		return answerOnly(r, merge), nil
	}
	return nil, merge
}

// topicCode refuses a topic list element without op on it.
func (b *Broker) topicCode(r *request, op acl.Operation) func(e reflect.Value) int16 {
	return func(e reflect.Value) int16 { return b.topicDenied(r, op, elemName(e)) }
}

// checkTopics refuses, topic by topic, those without op
// (TOPIC_AUTHORIZATION_FAILED): CreatePartitions (ALTER), DeleteRecords
// (DELETE).
func checkTopics(op acl.Operation, field string) aclCheck {
	return func(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
		return b.splitRequest(r, field, field, b.topicCode(r, op))
	}
}

// checkCluster refuses the whole request without op on the cluster
// (CLUSTER_AUTHORIZATION_FAILED): ElectLeaders and
// AlterPartitionReassignments (ALTER), ListPartitionReassignments
// (DESCRIBE).
func checkCluster(op acl.Operation) aclCheck {
	return func(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
		if b.allowed(r, op, acl.Cluster, acl.ClusterName) {
			return nil, nil
		}
		return b.denyAll(r, kerr.ClusterAuthorizationFailed.Code), nil
	}
}

func (b *Broker) groupAllowed(r *request, op acl.Operation, group string) bool {
	return b.allowed(r, op, acl.Group, group)
}

// groupCode refuses a group list element without op on it
// (GROUP_AUTHORIZATION_FAILED).
func (b *Broker) groupCode(r *request, op acl.Operation) func(e reflect.Value) int16 {
	return func(e reflect.Value) int16 {
		if b.groupAllowed(r, op, e.String()) {
			return 0
		}
		return kerr.GroupAuthorizationFailed.Code
	}
}

// Groups.

func checkJoinGroup(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.JoinGroupRequest)
	if b.groupAllowed(r, acl.Read, req.Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
	if req.Version < 7 {
		resp.Protocol = kmsg.StringPtr("")
	}
	return resp, nil
}

func checkSyncGroup(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.SyncGroupRequest)
	if b.groupAllowed(r, acl.Read, req.Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode, resp.MemberAssignment = kerr.GroupAuthorizationFailed.Code, []byte{}
	return resp, nil
}

func checkHeartbeat(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.HeartbeatRequest)
	if b.groupAllowed(r, acl.Read, req.Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	return resp, nil
}

func checkLeaveGroup(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.LeaveGroupRequest)
	if b.groupAllowed(r, acl.Read, req.Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	return resp, nil
}

// checkOffsetCommit: READ on the group (GROUP_AUTHORIZATION_FAILED in
// every partition), then READ on each topic.
func checkOffsetCommit(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.OffsetCommitRequest)
	if !b.groupAllowed(r, acl.Read, req.Group) {
		return b.denyAll(r, kerr.GroupAuthorizationFailed.Code), nil
	}
	return b.splitRequest(r, "Topics", "Topics", b.topicCode(r, acl.Read))
}

// checkOffsetDelete: DELETE on the group, READ on each topic.
func checkOffsetDelete(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.OffsetDeleteRequest)
	if !b.groupAllowed(r, acl.Delete, req.Group) {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.splitRequest(r, "Topics", "Topics", b.topicCode(r, acl.Read))
}

// checkOffsetFetch: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for
// the group); of the topics named, those without DESCRIBE answer
// TOPIC_AUTHORIZATION_FAILED; of all committed offsets (null topics), those
// of topics without DESCRIBE are left out.
func checkOffsetFetch(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.OffsetFetchRequest)
	describable := func(topic string) bool { return b.allowed(r, acl.Describe, acl.Topic, topic) }
	if req.Version < 8 {
		if !b.groupAllowed(r, acl.Describe, req.Group) {
			resp := kmsg.NewPtrOffsetFetchResponse()
			resp.SetVersion(req.Version)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		if req.Topics == nil {
			return nil, func(kr kmsg.Response) {
				resp := kr.(*kmsg.OffsetFetchResponse)
				resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !describable(t.Topic) })
			}
		}
		add, _ := b.split(reflect.ValueOf(req).Elem(), "Topics", "Topics", b.topicCode(r, acl.Describe))
		if add == nil {
			return nil, nil
		}
		return nil, func(kr kmsg.Response) {
			if resp := kr.(*kmsg.OffsetFetchResponse); resp.ErrorCode == 0 {
				add(reflect.ValueOf(resp).Elem())
			}
		}
	}
	var deniedGroups []string
	topicAdds := map[string]func(reflect.Value){}
	allTopics := map[string]bool{}
	kept := req.Groups[:0:0]
	for i := range req.Groups {
		g := &req.Groups[i]
		if !b.groupAllowed(r, acl.Describe, g.Group) {
			deniedGroups = append(deniedGroups, g.Group)
			continue
		}
		if g.Topics == nil {
			allTopics[g.Group] = true
		} else if add, _ := b.split(reflect.ValueOf(g).Elem(), "Topics", "Topics", b.topicCode(r, acl.Describe)); add != nil {
			topicAdds[g.Group] = add
		}
		kept = append(kept, *g)
	}
	if len(deniedGroups) == 0 && len(topicAdds) == 0 && len(allTopics) == 0 {
		return nil, nil
	}
	req.Groups = kept
	merge := func(kr kmsg.Response) {
		resp := kr.(*kmsg.OffsetFetchResponse)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if allTopics[g.Group] {
				g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return !describable(t.Topic) })
			} else if add := topicAdds[g.Group]; add != nil {
				add(reflect.ValueOf(g).Elem())
			}
		}
		for _, name := range deniedGroups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
		}
	}
	if len(kept) == 0 {
		return answerOnly(r, merge), nil
	}
	return nil, merge
}

// checkDescribeGroups: DESCRIBE on each group; KIP-430 operations for the
// described ones. It is the check of DescribeGroups and of
// StreamsGroupDescribe, whose requests name the groups in Groups and carry
// IncludeAuthorizedOperations, and whose answers' Groups have Group,
// ErrorCode and AuthorizedOperations.
func checkDescribeGroups(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	deny, merge := b.splitRequest(r, "Groups", "Groups", b.groupCode(r, acl.Describe))
	if deny != nil || !reflect.ValueOf(r.msg).Elem().FieldByName("IncludeAuthorizedOperations").Bool() {
		return deny, merge
	}
	return nil, func(kr kmsg.Response) {
		groups := reflect.ValueOf(kr).Elem().FieldByName("Groups")
		for i := range groups.Len() {
			if g := groups.Index(i); g.FieldByName("ErrorCode").Int() == 0 {
				ops := b.authorizedOps(r, acl.Group, g.FieldByName("Group").String(), groupOps...)
				g.FieldByName("AuthorizedOperations").SetInt(int64(ops))
			}
		}
		if merge != nil {
			merge(kr)
		}
	}
}

// checkListGroups: every group with DESCRIBE on the cluster, else only the
// groups the client may describe.
func checkListGroups(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	if b.allowed(r, acl.Describe, acl.Cluster, acl.ClusterName) {
		return nil, nil
	}
	return nil, func(kr kmsg.Response) {
		resp := kr.(*kmsg.ListGroupsResponse)
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !b.groupAllowed(r, acl.Describe, g.Group)
		})
	}
}

// checkDeleteGroups: DELETE on each group.
func checkDeleteGroups(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return b.splitRequest(r, "Groups", "Groups", b.groupCode(r, acl.Delete))
}

// checkConsumerGroupHeartbeat: READ on the group, and DESCRIBE on every
// subscribed topic named (TOPIC_AUTHORIZATION_FAILED otherwise).
func checkConsumerGroupHeartbeat(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.ConsumerGroupHeartbeatRequest)
	code := b.heartbeatDenied(r, req.Group, req.SubscribedTopicNames)
	if code == 0 {
		return nil, nil
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = code
	return resp, nil
}

// checkStreamsGroupHeartbeat: READ on the group, and DESCRIBE on every
// source topic of the topology a joining member sends.
func checkStreamsGroupHeartbeat(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.StreamsGroupHeartbeatRequest)
	var topics []string
	if req.Topology != nil {
		for _, st := range req.Topology.Subtopologies {
			topics = append(topics, st.SourceTopics...)
		}
	}
	code := b.heartbeatDenied(r, req.Group, topics)
	if code == 0 {
		return nil, nil
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = code
	return resp, nil
}

// checkStreamsTopologyDescriptionUpdate: READ on the group (KIP-1331: a
// push, like an offset commit, changes nothing of the group).
func checkStreamsTopologyDescriptionUpdate(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	if b.groupAllowed(r, acl.Read, req.Group) {
		return nil, nil
	}
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	return resp, nil
}

// heartbeatDenied is the check of a KIP-848 or share group heartbeat: READ
// on the group, then DESCRIBE on every subscribed topic name.
func (b *Broker) heartbeatDenied(r *request, group string, topics []string) int16 {
	if !b.groupAllowed(r, acl.Read, group) {
		return kerr.GroupAuthorizationFailed.Code
	}
	for _, t := range topics {
		if !b.allowed(r, acl.Describe, acl.Topic, t) {
			return kerr.TopicAuthorizationFailed.Code
		}
	}
	return 0
}

// unauthorizedTopicsMessage is Kafka's message for a described consumer
// group whose assignments name a topic the client may not describe.
const unauthorizedTopicsMessage = "The group has described topic(s) that the client is not authorized to describe."

// checkConsumerGroupDescribe: DESCRIBE on each group; a group whose
// members' assignments or target assignments name a topic without DESCRIBE
// is answered TOPIC_AUTHORIZATION_FAILED, without members.
func checkConsumerGroupDescribe(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.ConsumerGroupDescribeRequest)
	deny, merge := b.splitRequest(r, "Groups", "Groups", b.groupCode(r, acl.Describe))
	if deny != nil {
		return deny, nil
	}
	return nil, func(kr kmsg.Response) {
		resp := kr.(*kmsg.ConsumerGroupDescribeResponse)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if b.hidesTopic(r, g.Members) {
				*g = kmsg.NewConsumerGroupDescribeResponseGroup()
				g.Group = resp.Groups[i].Group
				g.ErrorCode, g.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(unauthorizedTopicsMessage)
				g.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = b.authorizedOps(r, acl.Group, g.Group, groupOps...)
			}
		}
		if merge != nil {
			merge(kr)
		}
	}
}

func (b *Broker) hidesTopic(r *request, members []kmsg.ConsumerGroupDescribeResponseGroupMember) bool {
	for _, m := range members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !b.allowed(r, acl.Describe, acl.Topic, tp.Topic) {
					return true
				}
			}
		}
	}
	return false
}

// Transactions.

// checkAddPartitionsToTxn: before v4, WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED in every partition) and on each
// topic (an internal topic is never allowed); when a topic is refused, the
// others are answered UNKNOWN_TOPIC_OR_PARTITION if they do not exist, else
// OPERATION_NOT_ATTEMPTED, and nothing is added. v4+ is sent by brokers
// and needs CLUSTER_ACTION on the cluster.
func checkAddPartitionsToTxn(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.AddPartitionsToTxnRequest)
	if req.Version >= 4 {
		if b.allowed(r, acl.ClusterAction, acl.Cluster, acl.ClusterName) {
			return nil, nil
		}
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !b.allowed(r, acl.Write, acl.TransactionalID, req.TransactionalID) {
		return b.denyAll(r, kerr.TransactionalIDAuthorizationFailed.Code), nil
	}
	refused := false
	for _, t := range req.Topics {
		if isInternalTopic(t.Topic) || !b.allowed(r, acl.Write, acl.Topic, t.Topic) {
			refused = true
		}
	}
	if !refused {
		return nil, nil
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = t.Topic
		code := kerr.OperationNotAttempted.Code
		parts := b.topicPartitions(t.Topic)
		for _, p := range t.Partitions {
			switch {
			case isInternalTopic(t.Topic) || !b.allowed(r, acl.Write, acl.Topic, t.Topic):
				code = kerr.TopicAuthorizationFailed.Code
			case partitionAt(parts, p) == nil:
				code = kerr.UnknownTopicOrPartition.Code
			}
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// checkAddOffsetsToTxn: WRITE on the transactional id, READ on the group.
func checkAddOffsetsToTxn(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.AddOffsetsToTxnRequest)
	code := int16(0)
	switch {
	case !b.allowed(r, acl.Write, acl.TransactionalID, req.TransactionalID):
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case !b.groupAllowed(r, acl.Read, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	default:
		return nil, nil
	}
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = code
	return resp, nil
}

// checkEndTxn: WRITE on the transactional id.
func checkEndTxn(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.EndTxnRequest)
	if b.allowed(r, acl.Write, acl.TransactionalID, req.TransactionalID) {
		return nil, nil
	}
	resp := kmsg.NewPtrEndTxnResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	return resp, nil
}

// checkTxnOffsetCommit: WRITE on the transactional id and READ on the group
// (each refusal in every partition), then READ on each topic.
func checkTxnOffsetCommit(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	req := r.msg.(*kmsg.TxnOffsetCommitRequest)
	if !b.allowed(r, acl.Write, acl.TransactionalID, req.TransactionalID) {
		return b.denyAll(r, kerr.TransactionalIDAuthorizationFailed.Code), nil
	}
	if !b.groupAllowed(r, acl.Read, req.Group) {
		return b.denyAll(r, kerr.GroupAuthorizationFailed.Code), nil
	}
	return b.splitRequest(r, "Topics", "Topics", b.topicCode(r, acl.Read))
}

// checkDescribeTransactions: DESCRIBE on each transactional id; the
// partitions of topics the client may not describe are left out.
func checkDescribeTransactions(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	deny, merge := b.splitRequest(r, "TransactionalIDs", "TransactionStates", func(e reflect.Value) int16 {
		if b.allowed(r, acl.Describe, acl.TransactionalID, e.String()) {
			return 0
		}
		return kerr.TransactionalIDAuthorizationFailed.Code
	})
	if deny != nil {
		return deny, nil
	}
	return nil, func(kr kmsg.Response) {
		resp := kr.(*kmsg.DescribeTransactionsResponse)
		for i := range resp.TransactionStates {
			s := &resp.TransactionStates[i]
			s.Topics = slices.DeleteFunc(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return !b.allowed(r, acl.Describe, acl.Topic, t.Topic)
			})
		}
		if merge != nil {
			merge(kr)
		}
	}
}

// checkListTransactions lists only the transactional ids the client may
// describe.
func checkListTransactions(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return nil, func(kr kmsg.Response) {
		resp := kr.(*kmsg.ListTransactionsResponse)
		resp.TransactionStates = slices.DeleteFunc(resp.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return !b.allowed(r, acl.Describe, acl.TransactionalID, s.TransactionalID)
		})
	}
}

// checkDescribeProducers: READ on each topic.
func checkDescribeProducers(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return b.splitRequest(r, "Topics", "Topics", b.topicCode(r, acl.Read))
}

// checkWriteTxnMarkers: ALTER or CLUSTER_ACTION on the cluster
// (CLUSTER_AUTHORIZATION_FAILED in every partition).
func checkWriteTxnMarkers(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	if b.allowed(r, acl.Alter, acl.Cluster, acl.ClusterName) || b.allowed(r, acl.ClusterAction, acl.Cluster, acl.ClusterName) {
		return nil, nil
	}
	return b.denyAll(r, kerr.ClusterAuthorizationFailed.Code), nil
}

// Configs.

// configResourceCode refuses a config resource without op: a topic on the
// topic, a group on the group, the others (broker, broker logger, client
// metrics) on the cluster.
func (b *Broker) configResourceCode(r *request, op acl.Operation) func(e reflect.Value) int16 {
	return func(e reflect.Value) int16 {
		name := elemName(e)
		switch kmsg.ConfigResourceType(e.FieldByName("ResourceType").Int()) {
		case kmsg.ConfigResourceTypeTopic:
			return b.topicDenied(r, op, name)
		case kmsg.ConfigResourceTypeGroupConfig:
			if !b.groupAllowed(r, op, name) {
				return kerr.GroupAuthorizationFailed.Code
			}
		default:
			if !b.allowed(r, op, acl.Cluster, acl.ClusterName) {
				return kerr.ClusterAuthorizationFailed.Code
			}
		}
		return 0
	}
}

// checkDescribeConfigs: DESCRIBE_CONFIGS on each resource.
func checkDescribeConfigs(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return b.splitRequest(r, "Resources", "Resources", b.configResourceCode(r, acl.DescribeConfigs))
}

// checkAlterConfigs: ALTER_CONFIGS on each resource (AlterConfigs and
// IncrementalAlterConfigs).
func checkAlterConfigs(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	return b.splitRequest(r, "Resources", "Resources", b.configResourceCode(r, acl.AlterConfigs))
}

// Cluster.

// checkDescribeLogDirs: DESCRIBE on the cluster, else no results and (v3+)
// CLUSTER_AUTHORIZATION_FAILED.
func checkDescribeLogDirs(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	if b.allowed(r, acl.Describe, acl.Cluster, acl.ClusterName) {
		return nil, nil
	}
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	resp.SetVersion(r.msg.GetVersion())
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	return resp, nil
}

// checkAlterReplicaLogDirs: ALTER on the cluster, else every partition
// CLUSTER_AUTHORIZATION_FAILED.
func checkAlterReplicaLogDirs(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	if b.allowed(r, acl.Alter, acl.Cluster, acl.ClusterName) {
		return nil, nil
	}
	req := r.msg.(*kmsg.AlterReplicaLogDirsRequest)
	return alterReplicaLogDirsAnswer(req, func(string, string, int32) int16 { return kerr.ClusterAuthorizationFailed.Code }), nil
}

// checkDescribeUserScram: DESCRIBE on the cluster, else the error at the
// top and in one result per user asked for.
func checkDescribeUserScram(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	if b.allowed(r, acl.Describe, acl.Cluster, acl.ClusterName) {
		return nil, nil
	}
	req := r.msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	for range req.Users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// checkAlterUserScram: ALTER on the cluster, else the error for each user
// named, in name order.
func checkAlterUserScram(b *Broker, r *request) (kmsg.Response, func(kmsg.Response)) {
	if b.allowed(r, acl.Alter, acl.Cluster, acl.ClusterName) {
		return nil, nil
	}
	req := r.msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	var users []string
	for _, d := range req.Deletions {
		users = append(users, d.Name)
	}
	for _, u := range req.Upsertions {
		users = append(users, u.Name)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	resp.SetVersion(req.Version)
	for _, u := range users {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = u, kerr.ClusterAuthorizationFailed.Code
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
