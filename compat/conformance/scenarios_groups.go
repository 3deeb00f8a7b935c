package conformance

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenarios of consumer groups and transactions.

func joinReq(group, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID = group, member
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	return req
}

// findCoordinator waits until the coordinator of key (type 0 group, 1
// transaction) is available.
func findCoordinator(e *Env, key string, typ int8) *kmsg.FindCoordinatorResponse {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = typ
	req.CoordinatorKeys = []string{key}
	req.CoordinatorKey = key
	var r *kmsg.FindCoordinatorResponse
	e.waitFor("coordinator", func() bool {
		r = Do[*kmsg.FindCoordinatorResponse](e, req)
		return len(r.Coordinators) == 0 || r.Coordinators[0].ErrorCode != 15
	})
	if typ == 0 {
		// The group coordinator answers before __consumer_offsets is
		// loaded; wait for that too (COORDINATOR_LOAD_IN_PROGRESS,
		// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR).
		e.waitFor("group coordinator loaded", func() bool {
			d := kmsg.NewPtrDescribeGroupsRequest()
			d.Groups = []string{key}
			dr := Do[*kmsg.DescribeGroupsResponse](e, d)
			c := dr.Groups[0].ErrorCode
			return c != 14 && c != 15 && c != 16
		})
	}
	return r
}

// joinedGroup is a one-member group after Join (twice, v4+ member id
// required) and Sync: its member id and generation.
func joinedGroup(e *Env, group string) (string, int32) {
	findCoordinator(e, group, 0)
	j := Do[*kmsg.JoinGroupResponse](e, joinReq(group, ""))
	if j.ErrorCode == 79 { // MEMBER_ID_REQUIRED
		j = Do[*kmsg.JoinGroupResponse](e, joinReq(group, j.MemberID))
	}
	if j.ErrorCode != 0 {
		e.fail("setup: JoinGroup: %s", errName(j.ErrorCode))
	}
	s := Do[*kmsg.SyncGroupResponse](e, syncReq(group, j.MemberID, j.Generation))
	if s.ErrorCode != 0 {
		e.fail("setup: SyncGroup: %s", errName(s.ErrorCode))
	}
	return j.MemberID, j.Generation
}

func syncReq(group, member string, gen int32) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	req.ProtocolType, req.Protocol = sp("consumer"), sp("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = member, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	req.GroupAssignment = append(req.GroupAssignment, a)
	return req
}

func heartbeatReq(group, member string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	return req
}

func offsetCommitReq(group, member string, gen int32, topic string, part int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.Metadata, p.LeaderEpoch = part, offset, sp("meta"), -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func offsetFetchReq(group, topic string, parts ...int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.Partitions = topic, parts
	g.Topics = append(g.Topics, t)
	req.Groups = append(req.Groups, g)
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	return req
}

func groupScenarios() []Scenario {
	return []Scenario{
		{"FindCoordinator", "group and transaction keys", func(e *Env) any {
			return map[string]any{"group": findCoordinator(e, "g-find", 0), "txn": findCoordinator(e, "t-find", 1)}
		}},
		{"FindCoordinator", "invalid coordinator type", func(e *Env) any {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = 5
			req.CoordinatorKeys = []string{"g"}
			r, err := e.Try(req)
			if err != nil {
				return "connection closed"
			}
			return r
		}},
		{"JoinGroup", "new member with an empty member id", func(e *Env) any {
			findCoordinator(e, "g-join-new", 0)
			return Do[*kmsg.JoinGroupResponse](e, joinReq("g-join-new", ""))
		}},
		{"JoinGroup", "unknown member id", func(e *Env) any {
			findCoordinator(e, "g-join-unknown", 0)
			return Do[*kmsg.JoinGroupResponse](e, joinReq("g-join-unknown", "not-a-member"))
		}},
		{"JoinGroup", "session timeout below the broker minimum", func(e *Env) any {
			findCoordinator(e, "g-join-session", 0)
			req := joinReq("g-join-session", "")
			req.SessionTimeoutMillis = 1
			return Do[*kmsg.JoinGroupResponse](e, req)
		}},
		{"JoinGroup", "inconsistent protocol type with the group", func(e *Env) any {
			joinedGroup(e, "g-join-proto")
			req := joinReq("g-join-proto", "")
			req.ProtocolType = "connect"
			return Do[*kmsg.JoinGroupResponse](e, req)
		}},
		{"JoinGroup", "full join and sync of one member", func(e *Env) any {
			findCoordinator(e, "g-join-full", 0)
			j1 := Do[*kmsg.JoinGroupResponse](e, joinReq("g-join-full", ""))
			j2 := Do[*kmsg.JoinGroupResponse](e, joinReq("g-join-full", j1.MemberID))
			s := Do[*kmsg.SyncGroupResponse](e, syncReq("g-join-full", j2.MemberID, j2.Generation))
			return map[string]any{"join": j2, "sync": s}
		}},
		{"Heartbeat", "wrong generation, unknown member, unknown group", func(e *Env) any {
			m, gen := joinedGroup(e, "g-hb")
			findCoordinator(e, "g-hb-none", 0)
			return map[string]any{
				"ok":            Do[*kmsg.HeartbeatResponse](e, heartbeatReq("g-hb", m, gen)),
				"badGeneration": Do[*kmsg.HeartbeatResponse](e, heartbeatReq("g-hb", m, gen+5)),
				"unknownMember": Do[*kmsg.HeartbeatResponse](e, heartbeatReq("g-hb", "nobody", gen)),
				"unknownGroup":  Do[*kmsg.HeartbeatResponse](e, heartbeatReq("g-hb-none", "nobody", 1)),
			}
		}},
		{"SyncGroup", "wrong generation and unknown member", func(e *Env) any {
			m, gen := joinedGroup(e, "g-sync")
			return map[string]any{
				"badGeneration": Do[*kmsg.SyncGroupResponse](e, syncReq("g-sync", m, gen+1)),
				"unknownMember": Do[*kmsg.SyncGroupResponse](e, syncReq("g-sync", "nobody", gen)),
			}
		}},
		{"LeaveGroup", "known and unknown member", func(e *Env) any {
			m, _ := joinedGroup(e, "g-leave")
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group = "g-leave"
			for _, id := range []string{m, "nobody"} {
				mm := kmsg.NewLeaveGroupRequestMember()
				mm.MemberID = id
				req.Members = append(req.Members, mm)
			}
			r := Do[*kmsg.LeaveGroupResponse](e, req)
			for i := range r.Members {
				if r.Members[i].MemberID == m {
					r.Members[i].MemberID = "<the member>"
				}
			}
			return r
		}},
		{"DescribeGroups", "stable group and unknown group", func(e *Env) any {
			joinedGroup(e, "g-describe")
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{"g-describe", "g-describe-none"}
			return Do[*kmsg.DescribeGroupsResponse](e, req)
		}},
		{"ListGroups", "filtered by state Stable", func(e *Env) any {
			joinedGroup(e, "g-list")
			req := kmsg.NewPtrListGroupsRequest()
			req.StatesFilter = []string{"Stable"}
			r := Do[*kmsg.ListGroupsResponse](e, req)
			var ours []kmsg.ListGroupsResponseGroup
			for _, g := range r.Groups {
				if g.Group == "g-list" {
					ours = append(ours, g)
				}
			}
			return map[string]any{"ErrorCode": r.ErrorCode, "g-list": ours}
		}},
		{"OffsetCommit", "unknown group with generation -1, then OffsetFetch", func(e *Env) any {
			e.CreateTopic("oc-simple", 1)
			findCoordinator(e, "g-oc-simple", 0)
			c := Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-oc-simple", "", -1, "oc-simple", 0, 7))
			f := Do[*kmsg.OffsetFetchResponse](e, offsetFetchReq("g-oc-simple", "oc-simple", 0, 1))
			return map[string]any{"commit": c, "fetch": f}
		}},
		{"OffsetCommit", "unknown topic", func(e *Env) any {
			findCoordinator(e, "g-oc-topic", 0)
			return Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-oc-topic", "", -1, "oc-no-topic", 0, 1))
		}},
		{"OffsetCommit", "stale generation and unknown member of a live group", func(e *Env) any {
			e.CreateTopic("oc-gen", 1)
			m, gen := joinedGroup(e, "g-oc-gen")
			return map[string]any{
				"badGeneration": Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-oc-gen", m, gen+3, "oc-gen", 0, 1)),
				"unknownMember": Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-oc-gen", "nobody", gen, "oc-gen", 0, 1)),
				"simple":        Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-oc-gen", "", -1, "oc-gen", 0, 1)),
			}
		}},
		{"OffsetFetch", "unknown group", func(e *Env) any {
			e.CreateTopic("of-none", 1)
			findCoordinator(e, "g-of-none", 0)
			return Do[*kmsg.OffsetFetchResponse](e, offsetFetchReq("g-of-none", "of-none", 0))
		}},
		{"OffsetDelete", "empty group with commits, unknown group", func(e *Env) any {
			e.CreateTopic("od", 1)
			findCoordinator(e, "g-od", 0)
			Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-od", "", -1, "od", 0, 3))
			mk := func(g string) *kmsg.OffsetDeleteRequest {
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = g
				t := kmsg.NewOffsetDeleteRequestTopic()
				t.Topic, t.Partitions = "od", []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
				req.Topics = append(req.Topics, t)
				return req
			}
			findCoordinator(e, "g-od-none", 0)
			return map[string]any{
				"empty":   Do[*kmsg.OffsetDeleteResponse](e, mk("g-od")),
				"unknown": Do[*kmsg.OffsetDeleteResponse](e, mk("g-od-none")),
				"fetch":   Do[*kmsg.OffsetFetchResponse](e, offsetFetchReq("g-od", "od", 0)),
			}
		}},
		{"DeleteGroups", "unknown, non-empty, empty", func(e *Env) any {
			e.CreateTopic("dg", 1)
			joinedGroup(e, "g-dg-live")
			findCoordinator(e, "g-dg-empty", 0)
			Do[*kmsg.OffsetCommitResponse](e, offsetCommitReq("g-dg-empty", "", -1, "dg", 0, 3))
			findCoordinator(e, "g-dg-none", 0)
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{"g-dg-none", "g-dg-live", "g-dg-empty"}
			return Do[*kmsg.DeleteGroupsResponse](e, req)
		}},
		{"ConsumerGroupHeartbeat", "join a new KIP-848 group, then an unknown member", func(e *Env) any {
			e.CreateTopic("cgh", 2)
			findCoordinator(e, "g-cgh", 0)
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberEpoch, req.RebalanceTimeoutMillis = "g-cgh", 0, 30000
			req.MemberID = "AAAAAAAAAAAAAAAAAAAAAA"
			req.SubscribedTopicNames = []string{"cgh"}
			req.ServerAssignor = sp("uniform")
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			first := Do[*kmsg.ConsumerGroupHeartbeatResponse](e, req)
			bad := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			bad.Group, bad.MemberID, bad.MemberEpoch = "g-cgh", "BBBBBBBBBBBBBBBBBBBBBB", 3
			if first.Assignment != nil {
				for i := range first.Assignment.Topics {
					first.Assignment.Topics[i].TopicID = [16]byte{1}
				}
			}
			return map[string]any{"join": first, "unknown": Do[*kmsg.ConsumerGroupHeartbeatResponse](e, bad)}
		}},
		{"ConsumerGroupHeartbeat", "member and group epochs: a first member (topic existing or missing), a second, the first rejoining", func(e *Env) any {
			e.CreateTopic("cgh-ep", 1)
			hb := func(group, member string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberEpoch, req.MemberID = group, epoch, member
				if epoch == 0 {
					req.RebalanceTimeoutMillis = 30000
					req.SubscribedTopicNames = topics
					req.ServerAssignor = sp("uniform")
					req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				}
				return Do[*kmsg.ConsumerGroupHeartbeatResponse](e, req)
			}
			out := map[string]any{}
			seq := func(name, group, member string, topics ...string) {
				findCoordinator(e, group, 0)
				var epochs []int32
				r := hb(group, member, 0, topics...)
				epochs = append(epochs, r.MemberEpoch)
				for i := 0; i < 3 && r.ErrorCode == 0; i++ {
					r = hb(group, member, r.MemberEpoch)
					epochs = append(epochs, r.MemberEpoch)
				}
				out[name] = epochs
				d := kmsg.NewPtrConsumerGroupDescribeRequest()
				d.Groups = []string{group}
				g := Do[*kmsg.ConsumerGroupDescribeResponse](e, d).Groups[0]
				out[name+".describe"] = fmt.Sprintf("group %d assignment %d members %d", g.Epoch, g.AssignmentEpoch, len(g.Members))
			}
			seq("existing", "g-cgh-ep1", memberA, "cgh-ep")
			seq("missing", "g-cgh-ep2", memberA, "cgh-ep-none")
			seq("secondMember", "g-cgh-ep1", memberB, "cgh-ep")
			seq("firstAgain", "g-cgh-ep1", memberA, "cgh-ep")
			return out
		}},
		{"ConsumerGroupDescribe", "unknown group and a classic group", func(e *Env) any {
			joinedGroup(e, "g-cgd-classic")
			findCoordinator(e, "g-cgd-none", 0)
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{"g-cgd-none", "g-cgd-classic"}
			return Do[*kmsg.ConsumerGroupDescribeResponse](e, req)
		}},

		// Transactions
		{"InitProducerId", "transactional, twice (epoch bump)", func(e *Env) any {
			txn := "t-init"
			findCoordinator(e, txn, 1)
			a := e.initPID(&txn, 60000)
			b := e.initPID(&txn, 60000)
			return map[string]any{"first": a, "second": b, "samePID": a.ProducerID == b.ProducerID, "epochDelta": b.ProducerEpoch - a.ProducerEpoch}
		}},
		{"InitProducerId", "transaction timeout above transaction.max.timeout.ms", func(e *Env) any {
			txn := "t-timeout"
			findCoordinator(e, txn, 1)
			return e.initPID(&txn, 3_600_000)
		}},
		{"EndTxn", "commit without AddPartitionsToTxn", func(e *Env) any {
			txn := "t-end-empty"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			return endTxn(e, txn, pid, epoch, true)
		}},
		{"EndTxn", "commit, fetch read_committed, abort after commit", func(e *Env) any {
			e.CreateTopic("t-commit", 1)
			txn := "t-commit-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			add := addPartitions(e, txn, pid, epoch, "t-commit", 0)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
			p := e.produce(produceReq(-1, &txn, "t-commit", 0, batch(o, vals("t", 2)...)))
			end := endTxn(e, txn, pid, epoch, true)
			var f *kmsg.FetchResponse
			e.waitFor("LSO past the commit", func() bool {
				f = Do[*kmsg.FetchResponse](e, fetchReq("t-commit", e.TopicID("t-commit"), 0, 0, 1<<20, 1))
				return f.Topics[0].Partitions[0].LastStableOffset == 3
			})
			// Once more: the answer that saw the LSO may predate the marker.
			f = Do[*kmsg.FetchResponse](e, fetchReq("t-commit", e.TopicID("t-commit"), 0, 0, 1<<20, 1))
			return map[string]any{"add": add, "produce": p, "end": end, "fetch": f}
		}},
		// The batches carry 2020 timestamps and the marker the broker's
		// clock: more than segment.ms (7 days) apart, so the marker starts
		// a new segment, and a Fetch answers from one segment only.
		{"EndTxn", "commit after 2020-stamped records: fetches at 0 and 2 (both isolations), before and after a later record", func(e *Env) any {
			e.CreateTopic("t-commit-where", 1)
			txn := "t-commit-where-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			addPartitions(e, txn, pid, epoch, "t-commit-where", 0)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
			e.produce(produceReq(-1, &txn, "t-commit-where", 0, batch(o, vals("t", 2)...)))
			endTxn(e, txn, pid, epoch, true)
			id := e.TopicID("t-commit-where")
			e.waitFor("LSO past the commit", func() bool {
				f := Do[*kmsg.FetchResponse](e, fetchReq("t-commit-where", id, 0, 0, 1<<20, 1))
				return f.Topics[0].Partitions[0].LastStableOffset == 3
			})
			out := map[string]any{}
			shape := func(f *kmsg.FetchResponse) []string {
				var bs []string
				p := f.Topics[0].Partitions[0]
				for _, b := range viewBatches(p.RecordBatches) {
					bs = append(bs, fmt.Sprintf("%d+%d %s", b.BaseOffset, b.LastOffsetDelta, b.Attributes))
				}
				bs = append(bs, fmt.Sprintf("hw=%d lso=%d", p.HighWatermark, p.LastStableOffset))
				return bs
			}
			for _, iso := range []int8{0, 1} {
				for _, off := range []int64{0, 2} {
					out[fmt.Sprintf("before.iso%d.at%d", iso, off)] = shape(Do[*kmsg.FetchResponse](e, fetchReq("t-commit-where", id, 0, off, 1<<20, iso)))
				}
			}
			e.produce(produceReq(-1, nil, "t-commit-where", 0, batch(batchOpts{producerID: -1, producerEpoch: -1, baseSequence: -1}, vals("p", 1)...)))
			for _, iso := range []int8{0, 1} {
				for _, off := range []int64{0, 2} {
					out[fmt.Sprintf("after.iso%d.at%d", iso, off)] = shape(Do[*kmsg.FetchResponse](e, fetchReq("t-commit-where", id, 0, off, 1<<20, iso)))
				}
			}
			return out
		}},
		{"EndTxn", "abort: read_committed sees the aborted transaction", func(e *Env) any {
			e.CreateTopic("t-abort", 1)
			txn := "t-abort-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			addPartitions(e, txn, pid, epoch, "t-abort", 0)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
			e.produce(produceReq(-1, &txn, "t-abort", 0, batch(o, vals("t", 2)...)))
			end := endTxn(e, txn, pid, epoch, false)
			var f *kmsg.FetchResponse
			e.waitFor("LSO past the abort", func() bool {
				f = Do[*kmsg.FetchResponse](e, fetchReq("t-abort", e.TopicID("t-abort"), 0, 0, 1<<20, 1))
				return f.Topics[0].Partitions[0].LastStableOffset == 3
			})
			// Once more: the answer that saw the LSO may predate the marker.
			f = Do[*kmsg.FetchResponse](e, fetchReq("t-abort", e.TopicID("t-abort"), 0, 0, 1<<20, 1))
			return map[string]any{"end": end, "fetch": f}
		}},
		{"AddPartitionsToTxn", "fenced epoch after a second InitProducerId", func(e *Env) any {
			e.CreateTopic("t-fence", 1)
			txn := "t-fence-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			e.InitProducerID(&txn)
			return addPartitions(e, txn, pid, epoch, "t-fence", 0)
		}},
		{"AddPartitionsToTxn", "unknown transactional id, unknown topic", func(e *Env) any {
			findCoordinator(e, "t-add-unknown", 1)
			unknownID := addPartitions(e, "t-add-unknown", 4711, 0, "t-nope", 0)
			txn := "t-add-topic"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			return map[string]any{"unknownID": unknownID, "unknownTopic": addPartitions(e, txn, pid, epoch, "t-no-such-topic", 0)}
		}},
		{"Produce", "transactional batch to a partition not added to the transaction", func(e *Env) any {
			e.CreateTopic("t-not-added", 1)
			txn := "t-not-added-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
			return e.produce(produceReq(-1, &txn, "t-not-added", 0, batch(o, vals("t", 1)...)))
		}},
		{"AddOffsetsToTxn", "then TxnOffsetCommit and commit", func(e *Env) any {
			e.CreateTopic("t-offsets", 1)
			txn := "t-offsets-id"
			findCoordinator(e, txn, 1)
			findCoordinator(e, "g-t-offsets", 0)
			pid, epoch := e.InitProducerID(&txn)
			ao := kmsg.NewPtrAddOffsetsToTxnRequest()
			ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txn, pid, epoch, "g-t-offsets"
			add := Do[*kmsg.AddOffsetsToTxnResponse](e, ao)
			tc := kmsg.NewPtrTxnOffsetCommitRequest()
			tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = txn, "g-t-offsets", pid, epoch, -1
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = "t-offsets"
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = 0, 5, -1
			t.Partitions = append(t.Partitions, p)
			tc.Topics = append(tc.Topics, t)
			commit := Do[*kmsg.TxnOffsetCommitResponse](e, tc)
			end := endTxn(e, txn, pid, epoch, true)
			var f *kmsg.OffsetFetchResponse
			e.waitFor("committed offset", func() bool {
				f = Do[*kmsg.OffsetFetchResponse](e, offsetFetchReq("g-t-offsets", "t-offsets", 0))
				return len(f.Groups) == 1 && len(f.Groups[0].Topics) == 1 && f.Groups[0].Topics[0].Partitions[0].Offset == 5
			})
			return map[string]any{"addOffsets": add, "txnCommit": commit, "end": end, "fetch": f}
		}},
		{"TxnOffsetCommit", "without AddOffsetsToTxn", func(e *Env) any {
			e.CreateTopic("t-toc", 1)
			txn := "t-toc-id"
			findCoordinator(e, txn, 1)
			findCoordinator(e, "g-t-toc", 0)
			pid, epoch := e.InitProducerID(&txn)
			tc := kmsg.NewPtrTxnOffsetCommitRequest()
			tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = txn, "g-t-toc", pid, epoch, -1
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = "t-toc"
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Offset, p.LeaderEpoch = 5, -1
			t.Partitions = append(t.Partitions, p)
			tc.Topics = append(tc.Topics, t)
			return Do[*kmsg.TxnOffsetCommitResponse](e, tc)
		}},
		{"DescribeTransactions", "ongoing and unknown", func(e *Env) any {
			e.CreateTopic("t-describe", 1)
			txn := "t-describe-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			addPartitions(e, txn, pid, epoch, "t-describe", 0)
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{txn, "t-describe-none"}
			return Do[*kmsg.DescribeTransactionsResponse](e, req)
		}},
		{"ListTransactions", "filtered by state Ongoing", func(e *Env) any {
			e.CreateTopic("t-list", 1)
			txn := "t-list-id"
			findCoordinator(e, txn, 1)
			pid, epoch := e.InitProducerID(&txn)
			addPartitions(e, txn, pid, epoch, "t-list", 0)
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters = []string{"Ongoing"}
			r := Do[*kmsg.ListTransactionsResponse](e, req)
			var ours []kmsg.ListTransactionsResponseTransactionState
			for _, s := range r.TransactionStates {
				if s.TransactionalID == txn {
					ours = append(ours, s)
				}
			}
			return map[string]any{"ErrorCode": r.ErrorCode, "UnknownStateFilters": r.UnknownStateFilters, "ours": ours}
		}},
		{"WriteTxnMarkers", "commit marker for a producer with no transaction", func(e *Env) any {
			e.CreateTopic("t-markers", 1)
			return commitMarker(e, "t-markers", 4242, 0)
		}},
		{"WriteTxnMarkers", "a marker from an older coordinator epoch than the producer's last", func(e *Env) any {
			e.CreateTopic("t-markers-epoch", 1)
			return map[string]any{
				"epoch5":      commitMarker(e, "t-markers-epoch", 4343, 5),
				"epoch4":      commitMarker(e, "t-markers-epoch", 4343, 4),
				"epoch5again": commitMarker(e, "t-markers-epoch", 4343, 5),
			}
		}},
	}
}

// commitMarker sends a WriteTxnMarkers with one COMMIT marker of producer
// pid (epoch 0) from coordinator epoch coordinatorEpoch to topic's
// partition 0.
func commitMarker(e *Env, topic string, pid int64, coordinatorEpoch int32) any {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, 0, true, coordinatorEpoch
	t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	t.Topic, t.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, t)
	req.Markers = append(req.Markers, m)
	r, err := e.Try(req)
	if err != nil {
		return "connection closed"
	}
	return r
}

func endTxn(e *Env, txn string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txn, pid, epoch, commit
	var r *kmsg.EndTxnResponse
	e.waitFor("EndTxn", func() bool {
		r = Do[*kmsg.EndTxnResponse](e, req)
		return r.ErrorCode != 51
	})
	return r
}

// All is every scenario, in report order.
func All() []Scenario {
	var out []Scenario
	out = append(out, adminScenarios()...)
	out = append(out, dataScenarios()...)
	out = append(out, groupScenarios()...)
	out = append(out, moreScenarios()...)
	out = append(out, textScenarios()...)
	out = append(out, featureScenarios()...)
	out = append(out, streamsScenarios()...)
	out = append(out, kraftScenarios()...)
	// Last: Kafka unregisters its own live broker, after which it lists
	// no broker at all.
	out = append(out, unregisterLiveBrokerScenario)
	return out
}
