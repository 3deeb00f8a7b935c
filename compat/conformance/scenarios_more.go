package conformance

import (
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenarios of share groups (KIP-932), KIP-848 consumer groups, client
// quotas, ACLs with the authorizer on, SCRAM credentials and dynamic broker
// configs.

// memberA and memberB are client-generated member ids (22 characters, as
// ConsumerGroupHeartbeat and ShareGroupHeartbeat v1 ask of a client).
const (
	memberA = "AAAAAAAAAAAAAAAAAAAAAA"
	memberB = "BBBBBBBBBBBBBBBBBBBBBB"
)

func shareHeartbeat(e *Env, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return Do[*kmsg.ShareGroupHeartbeatResponse](e, req)
}

// joinShare joins memberA to a share group subscribed to topic and
// heartbeats until it has an assignment; it returns the member epoch.
func joinShare(e *Env, group, topic string) int32 {
	findCoordinator(e, group, 0)
	r := shareHeartbeat(e, group, memberA, 0, topic)
	if r.ErrorCode != 0 {
		e.fail("setup: ShareGroupHeartbeat join: %s", errName(r.ErrorCode))
	}
	epoch := r.MemberEpoch
	e.waitFor("a share assignment", func() bool {
		if r.Assignment != nil && len(r.Assignment.TopicPartitions) > 0 {
			return true
		}
		r = shareHeartbeat(e, group, memberA, epoch)
		if r.ErrorCode != 0 {
			e.fail("setup: ShareGroupHeartbeat: %s", errName(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		return false
	})
	return epoch
}

// groupConfig sets a GROUP resource config (IncrementalAlterConfigs SET).
func groupConfig(e *Env, group, key, value string) *kmsg.IncrementalAlterConfigsResponse {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = key, 0, sp(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return Do[*kmsg.IncrementalAlterConfigsResponse](e, req)
}

func shareFetchReq(group, member string, epoch int32, id [16]byte, parts ...int32) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 1, 1<<20, 500, 500
	if id != ([16]byte{}) {
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = id
		for _, p := range parts {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// shareFetched joins a share group (share.auto.offset.reset=earliest) to a
// one-partition topic holding 3 records and share-fetches until records
// are acquired.
func shareFetched(e *Env, group, topic string) *kmsg.ShareFetchResponse {
	e.CreateTopic(topic, 1)
	e.MustProduce(topic, 0, batch(plainOpts(), vals("s", 3)...))
	findCoordinator(e, group, 0)
	groupConfig(e, group, "share.auto.offset.reset", "earliest")
	joinShare(e, group, topic)
	id := e.TopicID(topic)
	f := Do[*kmsg.ShareFetchResponse](e, shareFetchReq(group, memberA, 0, id, 0))
	epoch := int32(1)
	e.waitFor("acquired records", func() bool {
		if f.ErrorCode == 0 && len(f.Topics) == 1 && len(f.Topics[0].Partitions) == 1 && len(f.Topics[0].Partitions[0].AcquiredRecords) > 0 {
			return true
		}
		if f.ErrorCode != 0 {
			e.fail("setup: ShareFetch: %s", errName(f.ErrorCode))
		}
		f = Do[*kmsg.ShareFetchResponse](e, shareFetchReq(group, memberA, epoch, [16]byte{}))
		epoch++
		return false
	})
	e.shareEpoch = epoch
	return f
}

func shareAck(e *Env, group string, epoch int32, id [16]byte, first, last int64, typ int8) *kmsg.ShareAcknowledgeResponse {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	m := memberA
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &m, epoch
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = id
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return Do[*kmsg.ShareAcknowledgeResponse](e, req)
}

func describeShareOffsets(e *Env, group, topic string) *kmsg.DescribeShareGroupOffsetsResponse {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	t.Topic, t.Partitions = topic, []int32{0}
	g.Topics = append(g.Topics, t)
	req.Groups = append(req.Groups, g)
	return Do[*kmsg.DescribeShareGroupOffsetsResponse](e, req)
}

func alterShareOffsets(e *Env, group, topic string, start int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	p.Partition, p.StartOffset = 0, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return Do[*kmsg.AlterShareGroupOffsetsResponse](e, req)
}

func consumerHeartbeat(e *Env, group, member string, epoch int32, topics []string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		req.SubscribedTopicNames = topics
		req.SubscribedTopicRegex = regex
	}
	return Do[*kmsg.ConsumerGroupHeartbeatResponse](e, req)
}

// joinConsumer joins memberA to a KIP-848 group and heartbeats until it
// has an assignment; it returns the last answer.
func joinConsumer(e *Env, group string, topics []string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
	findCoordinator(e, group, 0)
	r := consumerHeartbeat(e, group, memberA, 0, topics, regex)
	if r.ErrorCode != 0 {
		return r
	}
	e.waitFor("a consumer assignment", func() bool {
		if r.ErrorCode != 0 || r.Assignment != nil && len(r.Assignment.Topics) > 0 {
			return true
		}
		r = consumerHeartbeat(e, group, memberA, r.MemberEpoch, nil, nil)
		return false
	})
	return r
}

func assigned(r *kmsg.ConsumerGroupHeartbeatResponse) int {
	n := 0
	if r.Assignment != nil {
		for _, t := range r.Assignment.Topics {
			n += len(t.Partitions)
		}
	}
	return n
}

func quotaEntity(kv ...string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i+1 < len(kv); i += 2 {
		en := kmsg.NewAlterClientQuotasRequestEntryEntity()
		en.Type = kv[i]
		if kv[i+1] != "" {
			en.Name = sp(kv[i+1])
		}
		out = append(out, en)
	}
	return out
}

func alterQuota(e *Env, validate bool, entity []kmsg.AlterClientQuotasRequestEntryEntity, key string, value float64, remove bool) *kmsg.AlterClientQuotasResponse {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validate
	en := kmsg.NewAlterClientQuotasRequestEntry()
	en.Entity = entity
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	en.Ops = append(en.Ops, op)
	req.Entries = append(req.Entries, en)
	return Do[*kmsg.AlterClientQuotasResponse](e, req)
}

// describeQuota: components are (entity type, match type, match) triples.
func describeQuota(e *Env, strict bool, comps ...any) *kmsg.DescribeClientQuotasResponse {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict = strict
	for i := 0; i+2 < len(comps)+1; i += 3 {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType = comps[i].(string)
		c.MatchType = kmsg.QuotasMatchType(comps[i+1].(int))
		if s, ok := comps[i+2].(string); ok {
			c.Match = &s
		}
		req.Components = append(req.Components, c)
	}
	return sortQuotas(Do[*kmsg.DescribeClientQuotasResponse](e, req))
}

func aclCreation(rtype int8, name string, pattern int8, principal string, op, perm int8) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(rtype), name, kmsg.ACLResourcePatternType(pattern)
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	return c
}

func describeACLs(e *Env, rtype int8, name *string, pattern int8, principal *string) *kmsg.DescribeACLsResponse {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(rtype), name, kmsg.ACLResourcePatternType(pattern)
	req.Principal, req.Operation, req.PermissionType = principal, 1, 1
	r := Do[*kmsg.DescribeACLsResponse](e, req)
	// The order of a resource's ACLs is not compared.
	for i := range r.Resources {
		acls := r.Resources[i].ACLs
		sort.Slice(acls, func(a, b int) bool {
			x, y := acls[a], acls[b]
			if x.Principal != y.Principal {
				return x.Principal < y.Principal
			}
			if x.Operation != y.Operation {
				return x.Operation < y.Operation
			}
			return x.PermissionType < y.PermissionType
		})
	}
	return r
}

// poll is waitFor for an outcome that may never come: it gives up after
// 5 s without failing the scenario, whose answer then shows the last state.
func (e *Env) poll(cond func() bool) {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// sortQuotas orders entries by their entities (the array has no key field).
func sortQuotas(r *kmsg.DescribeClientQuotasResponse) *kmsg.DescribeClientQuotasResponse {
	key := func(en kmsg.DescribeClientQuotasResponseEntry) string {
		var b strings.Builder
		for _, x := range en.Entity {
			b.WriteString(x.Type + "=")
			if x.Name != nil {
				b.WriteString(*x.Name)
			}
			b.WriteString(";")
		}
		return b.String()
	}
	sort.Slice(r.Entries, func(i, j int) bool { return key(r.Entries[i]) < key(r.Entries[j]) })
	return r
}

func moreScenarios() []Scenario {
	return []Scenario{
		// Share groups (KIP-932)
		{"ShareGroupHeartbeat", "join a new share group", func(e *Env) any {
			e.CreateTopic("sg-join", 2)
			findCoordinator(e, "g-sg-join", 0)
			r := shareHeartbeat(e, "g-sg-join", memberA, 0, "sg-join")
			return map[string]any{"ErrorCode": r.ErrorCode, "MemberID": r.MemberID, "epochSet": r.MemberEpoch > 0, "HeartbeatIntervalMillis": r.HeartbeatIntervalMillis}
		}},
		{"ShareGroupHeartbeat", "assignment of a one-member group, then leave", func(e *Env) any {
			e.CreateTopic("sg-assign", 2)
			epoch := joinShare(e, "g-sg-assign", "sg-assign")
			r := shareHeartbeat(e, "g-sg-assign", memberA, epoch)
			leave := shareHeartbeat(e, "g-sg-assign", memberA, -1)
			return map[string]any{"assignment": r.Assignment, "leave": leave}
		}},
		{"ShareGroupHeartbeat", "unknown member, empty member id, join without topics", func(e *Env) any {
			e.CreateTopic("sg-errs", 1)
			findCoordinator(e, "g-sg-errs", 0)
			return map[string]any{
				"unknown":   shareHeartbeat(e, "g-sg-errs", memberB, 3).ErrorCode,
				"emptyID":   shareHeartbeat(e, "g-sg-errs", "", 0, "sg-errs").ErrorCode,
				"noTopics":  shareHeartbeat(e, "g-sg-errs", memberA, 0).ErrorCode,
				"emptyName": shareHeartbeat(e, "", memberA, 0, "sg-errs").ErrorCode,
			}
		}},
		{"ShareGroupHeartbeat", "group id of a classic group", func(e *Env) any {
			joinedGroup(e, "g-sg-classic")
			return shareHeartbeat(e, "g-sg-classic", memberA, 0, "sg-errs").ErrorCode
		}},
		{"ShareGroupHeartbeat", "fenced member epoch", func(e *Env) any {
			e.CreateTopic("sg-fence", 1)
			epoch := joinShare(e, "g-sg-fence", "sg-fence")
			return shareHeartbeat(e, "g-sg-fence", memberA, epoch+5).ErrorCode
		}},
		{"ShareGroupDescribe", "unknown group, classic group and a share group", func(e *Env) any {
			e.CreateTopic("sg-desc", 1)
			joinShare(e, "g-sg-desc", "sg-desc")
			joinedGroup(e, "g-sg-desc-classic")
			findCoordinator(e, "g-sg-desc-none", 0)
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.GroupIDs = []string{"g-sg-desc", "g-sg-desc-none", "g-sg-desc-classic"}
			r := Do[*kmsg.ShareGroupDescribeResponse](e, req)
			for i := range r.Groups {
				for j := range r.Groups[i].Members {
					r.Groups[i].Members[j].ClientHost = "<host>"
				}
			}
			return r
		}},
		{"ShareFetch", "acquire records with share.auto.offset.reset=earliest", func(e *Env) any {
			f := shareFetched(e, "g-sf", "sf")
			return f
		}},
		{"ShareFetch", "session epoch 5 without a session, unknown member", func(e *Env) any {
			e.CreateTopic("sf-errs", 1)
			joinShare(e, "g-sf-errs", "sf-errs")
			id := e.TopicID("sf-errs")
			return map[string]any{
				"noSession": Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sf-errs", memberA, 5, id, 0)).ErrorCode,
				"unknown":   Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sf-errs", memberB, 0, id, 0)).ErrorCode,
			}
		}},
		{"ShareFetch", "unknown topic id", func(e *Env) any {
			e.CreateTopic("sf-unknown", 1)
			joinShare(e, "g-sf-unknown", "sf-unknown")
			return Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sf-unknown", memberA, 0, [16]byte{7, 7}, 0))
		}},
		{"ShareAcknowledge", "accept the acquired records, then describe offsets", func(e *Env) any {
			shareFetched(e, "g-sa", "sa")
			id := e.TopicID("sa")
			ack := shareAck(e, "g-sa", e.shareEpoch, id, 0, 2, 1)
			var d *kmsg.DescribeShareGroupOffsetsResponse
			e.poll(func() bool {
				d = describeShareOffsets(e, "g-sa", "sa")
				return len(d.Groups) == 1 && len(d.Groups[0].Topics) == 1 && d.Groups[0].Topics[0].Partitions[0].StartOffset == 3
			})
			return map[string]any{"ack": ack, "describe": d}
		}},
		{"ShareAcknowledge", "accept everything: the described start offset after the ack, a further fetch, more records and the member leaving", func(e *Env) any {
			shareFetched(e, "g-sa-when", "sa-when")
			id := e.TopicID("sa-when")
			shareAck(e, "g-sa-when", e.shareEpoch, id, 0, 2, 1)
			start := func() int64 {
				d := describeShareOffsets(e, "g-sa-when", "sa-when")
				if len(d.Groups) != 1 || len(d.Groups[0].Topics) != 1 || len(d.Groups[0].Topics[0].Partitions) != 1 {
					return -2
				}
				return d.Groups[0].Topics[0].Partitions[0].StartOffset
			}
			out := map[string]any{"afterAck": start()}
			Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sa-when", memberA, e.shareEpoch+1, id, 0))
			out["afterFetch"] = start()
			e.MustProduce("sa-when", 0, batch(plainOpts(), vals("t", 2)...))
			f := Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sa-when", memberA, e.shareEpoch+2, id, 0))
			out["acquiredMore"] = len(f.Topics) == 1 && len(f.Topics[0].Partitions) == 1 && len(f.Topics[0].Partitions[0].AcquiredRecords) > 0
			out["afterMoreFetched"] = start()
			shareHeartbeat(e, "g-sa-when", memberA, -1)
			var got int64
			e.poll(func() bool { got = start(); return got == 3 })
			out["afterLeave"] = got
			return out
		}},
		{"ShareAcknowledge", "delivery counts after a release and after the session closes with records acquired", func(e *Env) any {
			// Kafka 4.4 counts both as deliveries: a record released by a
			// closing session is not given its delivery back.
			shareFetched(e, "g-sa-dc", "sa-dc")
			id := e.TopicID("sa-dc")
			// Release offset 0, then close the session with offsets 1
			// and 2 still acquired.
			rel := shareAck(e, "g-sa-dc", e.shareEpoch, id, 0, 0, 2)
			closeReq := kmsg.NewPtrShareAcknowledgeRequest()
			g, m := "g-sa-dc", memberA
			closeReq.GroupID, closeReq.MemberID, closeReq.ShareSessionEpoch = &g, &m, -1
			closed := Do[*kmsg.ShareAcknowledgeResponse](e, closeReq)
			// A new session acquires them again: Kafka releases a closed
			// session's records after it answers, so they may come over
			// several fetches.
			counts := map[int64]int16{}
			epoch := int32(0)
			e.poll(func() bool {
				f := Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sa-dc", memberA, epoch, id, 0))
				if f.ErrorCode != 0 {
					e.fail("ShareFetch: %s", errName(f.ErrorCode))
				}
				epoch++
				for _, t := range f.Topics {
					for _, p := range t.Partitions {
						for _, a := range p.AcquiredRecords {
							for o := a.FirstOffset; o <= a.LastOffset; o++ {
								counts[o] = a.DeliveryCount
							}
						}
					}
				}
				return len(counts) == 3
			})
			return map[string]any{"release": rel.ErrorCode, "close": closed.ErrorCode, "deliveryCounts": counts}
		}},
		{"ShareFetch", "a member opens a new session holding acquired records: fetch, then accept them in the new session", func(e *Env) any {
			shareFetched(e, "g-sf-reopen", "sf-reopen")
			id := e.TopicID("sf-reopen")
			reopened := Do[*kmsg.ShareFetchResponse](e, shareFetchReq("g-sf-reopen", memberA, 0, id, 0))
			acquired := 0
			for _, t := range reopened.Topics {
				for _, p := range t.Partitions {
					for _, a := range p.AcquiredRecords {
						acquired += int(a.LastOffset - a.FirstOffset + 1)
					}
				}
			}
			ack := shareAck(e, "g-sf-reopen", 1, id, 0, 2, 1)
			return map[string]any{"reopenError": reopened.ErrorCode, "acquiredAgain": acquired, "ack": ack}
		}},
		{"ShareFetch", "share.isolation.level=read_committed: plain records, an aborted, a committed and an open transaction; then the open one committed", func(e *Env) any {
			const topic = "sf-rc"
			group := "g-sf-rc"
			e.CreateTopic(topic, 1)
			e.MustProduce(topic, 0, batch(plainOpts(), vals("p", 2)...)) // 0-1
			txn := func(id string, n int) (int64, int16) {
				findCoordinator(e, id, 1)
				pid, epoch := e.InitProducerID(&id)
				addPartitions(e, id, pid, epoch, topic, 0)
				o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
				e.produce(produceReq(-1, &id, topic, 0, batch(o, vals(id, n)...)))
				return pid, epoch
			}
			apid, aepoch := txn("sf-rc-aborted", 2) // 2-3, marker 4
			endTxn(e, "sf-rc-aborted", apid, aepoch, false)
			cpid, cepoch := txn("sf-rc-committed", 1) // 5, marker 6
			endTxn(e, "sf-rc-committed", cpid, cepoch, true)
			id := e.TopicID(topic)
			e.waitFor("the markers", func() bool {
				f := Do[*kmsg.FetchResponse](e, fetchReq(topic, id, 0, 0, 1<<20, 1))
				return f.Topics[0].Partitions[0].LastStableOffset == 7
			})
			opid, oepoch := txn("sf-rc-open", 1) // 7, open
			groupConfig(e, group, "share.auto.offset.reset", "earliest")
			isolation := groupConfig(e, group, "share.isolation.level", "read_committed").Resources[0].ErrorCode
			joinShare(e, group, topic)
			epoch := int32(0)
			// The acquired offsets: how Kafka cuts them into ranges
			// depends on its fetches' timing.
			acquired := func(want int64) []int64 {
				var got []int64
				e.poll(func() bool {
					f := Do[*kmsg.ShareFetchResponse](e, shareFetchReq(group, memberA, epoch, id, 0))
					epoch++
					if f.ErrorCode != 0 {
						e.fail("ShareFetch: %s", errName(f.ErrorCode))
					}
					done := false
					for _, t := range f.Topics {
						for _, p := range t.Partitions {
							for _, a := range p.AcquiredRecords {
								for o := a.FirstOffset; o <= a.LastOffset; o++ {
									got = append(got, o)
								}
								done = done || a.LastOffset >= want
								if a.DeliveryCount != 1 {
									e.fail("delivery count %d", a.DeliveryCount)
								}
							}
						}
					}
					return done
				})
				return got
			}
			before := acquired(5)
			endTxn(e, "sf-rc-open", opid, oepoch, true) // 7 committed, marker 8
			after := acquired(8)
			// The same log to a read_uncommitted group.
			group = "g-sf-ru"
			groupConfig(e, group, "share.auto.offset.reset", "earliest")
			joinShare(e, group, topic)
			epoch = 0
			uncommitted := acquired(8)
			return map[string]any{"isolationSet": isolation, "beforeCommit": before, "afterCommit": after, "readUncommitted": uncommitted}
		}},
		{"ShareAcknowledge", "share.renew.acknowledge.enable: a bad value; a renew refused while false, allowed once true", func(e *Env) any {
			const group = "g-sa-renew"
			shareFetched(e, group, "sa-renew")
			id := e.TopicID("sa-renew")
			renew := func(epoch int32) any {
				req := kmsg.NewPtrShareAcknowledgeRequest()
				g, m := group, memberA
				req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = &g, &m, epoch, true
				t := kmsg.NewShareAcknowledgeRequestTopic()
				t.TopicID = id
				p := kmsg.NewShareAcknowledgeRequestTopicPartition()
				b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
				b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 2, []int8{4}
				p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				r := Do[*kmsg.ShareAcknowledgeResponse](e, req)
				if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
					return errName(r.ErrorCode)
				}
				rp := r.Topics[0].Partitions[0]
				return text(rp.ErrorCode, rp.ErrorMessage)
			}
			bad := groupConfig(e, group, "share.renew.acknowledge.enable", "yes").Resources[0]
			groupConfig(e, group, "share.renew.acknowledge.enable", "false")
			refused := renew(e.shareEpoch)
			groupConfig(e, group, "share.renew.acknowledge.enable", "TRUE")
			allowed := renew(e.shareEpoch + 1)
			return map[string]any{"badValue": text(bad.ErrorCode, bad.ErrorMessage), "refused": refused, "allowed": allowed}
		}},
		{"ShareFetch", "share.auto.offset.reset=by_duration: the first record at most an hour old; bad values", func(e *Env) any {
			const topic = "sf-dur"
			e.CreateTopic(topic, 1)
			e.MustProduce(topic, 0, batch(plainOpts(), vals("old", 2)...)) // 0-1, 2020
			recent := plainOpts()
			recent.timestamp = time.Now().Add(-10 * time.Minute).UnixMilli()
			e.MustProduce(topic, 0, batch(recent, vals("new", 2)...)) // 2-3
			out := map[string]any{}
			for _, v := range []string{"by_duration:-PT1H", "by_duration:1h", "by_duration:", "BY_DURATION:PT1H", "by_duration:pt1h", "Earliest", "by_duration:P36500D"} {
				r := groupConfig(e, "g-sf-dur-bad", "share.auto.offset.reset", v).Resources[0]
				out["bad "+v] = text(r.ErrorCode, r.ErrorMessage)
			}
			for group, v := range map[string]string{"g-sf-dur": "by_duration:PT1H", "g-sf-dur-all": "by_duration:P3650D"} {
				out[group+" set"] = groupConfig(e, group, "share.auto.offset.reset", v).Resources[0].ErrorCode
				joinShare(e, group, topic)
				id := e.TopicID(topic)
				first := int64(-1)
				epoch := int32(0)
				e.poll(func() bool {
					f := Do[*kmsg.ShareFetchResponse](e, shareFetchReq(group, memberA, epoch, id, 0))
					epoch++
					for _, t := range f.Topics {
						for _, p := range t.Partitions {
							if len(p.AcquiredRecords) > 0 {
								first = p.AcquiredRecords[0].FirstOffset
							}
						}
					}
					return first >= 0
				})
				out[group+" first acquired"] = first
			}
			return out
		}},
		{"ShareAcknowledge", "session epoch 0, unknown ack type", func(e *Env) any {
			shareFetched(e, "g-sa-errs", "sa-errs")
			id := e.TopicID("sa-errs")
			zero := shareAck(e, "g-sa-errs", 0, id, 0, 0, 1)
			badType := shareAck(e, "g-sa-errs", e.shareEpoch, id, 0, 0, 9)
			return map[string]any{"zero": zero, "badType": badType}
		}},
		{"DescribeShareGroupOffsets", "unknown group, unknown topic", func(e *Env) any {
			findCoordinator(e, "g-dsgo-none", 0)
			e.CreateTopic("dsgo", 1)
			joinShare(e, "g-dsgo", "dsgo")
			return map[string]any{"unknownGroup": describeShareOffsets(e, "g-dsgo-none", "dsgo"), "unknownTopic": describeShareOffsets(e, "g-dsgo", "dsgo-nope")}
		}},
		{"DescribeShareGroupOffsets", "a classic group, a consumer group, a share group's partition without state", func(e *Env) any {
			e.CreateTopic("dsgo-b", 1)
			e.CreateTopic("dsgo-nostate", 1)
			joinedGroup(e, "g-dsgo-classic")
			joinShare(e, "g-dsgo-b", "dsgo-b")
			findCoordinator(e, "g-dsgo-consumer", 0)
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g-dsgo-consumer", memberA, 0, 30000
			req.SubscribedTopicNames = []string{"dsgo-b"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			Do[*kmsg.ConsumerGroupHeartbeatResponse](e, req)
			return map[string]any{
				"classic":  describeShareOffsets(e, "g-dsgo-classic", "dsgo-b"),
				"consumer": describeShareOffsets(e, "g-dsgo-consumer", "dsgo-b"),
				"noState":  describeShareOffsets(e, "g-dsgo-b", "dsgo-nostate"),
			}
		}},
		{"AlterShareGroupOffsets", "non-empty group, then an empty group and describe", func(e *Env) any {
			e.CreateTopic("asgo", 1)
			e.MustProduce("asgo", 0, batch(plainOpts(), vals("a", 3)...))
			epoch := joinShare(e, "g-asgo", "asgo")
			busy := alterShareOffsets(e, "g-asgo", "asgo", 1)
			shareHeartbeat(e, "g-asgo", memberA, -1)
			_ = epoch
			var ok *kmsg.AlterShareGroupOffsetsResponse
			e.waitFor("group empty", func() bool {
				ok = alterShareOffsets(e, "g-asgo", "asgo", 1)
				return ok.ErrorCode != 68 // NON_EMPTY_GROUP
			})
			var d *kmsg.DescribeShareGroupOffsetsResponse
			e.waitFor("start offset 1", func() bool {
				d = describeShareOffsets(e, "g-asgo", "asgo")
				return len(d.Groups) == 1 && len(d.Groups[0].Topics) == 1 && d.Groups[0].Topics[0].Partitions[0].StartOffset == 1
			})
			return map[string]any{"busy": busy, "alter": ok, "describe": d}
		}},
		{"AlterShareGroupOffsets", "unknown topic on an empty group", func(e *Env) any {
			findCoordinator(e, "g-asgo-topic", 0)
			return alterShareOffsets(e, "g-asgo-topic", "asgo-nope", 0)
		}},
		{"DeleteShareGroupOffsets", "unknown group, then after alter", func(e *Env) any {
			findCoordinator(e, "g-dsgo-del", 0)
			e.CreateTopic("dsgo-del", 1)
			req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			req.GroupID = "g-dsgo-del"
			t := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
			t.Topic = "dsgo-del"
			req.Topics = append(req.Topics, t)
			unknown := Do[*kmsg.DeleteShareGroupOffsetsResponse](e, req)
			alter := alterShareOffsets(e, "g-dsgo-del", "dsgo-del", 0)
			return map[string]any{"unknown": unknown, "alter": alter, "delete": Do[*kmsg.DeleteShareGroupOffsetsResponse](e, req)}
		}},

		// KIP-848 consumer groups
		{"ConsumerGroupHeartbeat", "assignment, then leave", func(e *Env) any {
			e.CreateTopic("cg-leave", 2)
			r := joinConsumer(e, "g-cg-leave", []string{"cg-leave"}, nil)
			leave := consumerHeartbeat(e, "g-cg-leave", memberA, -1, nil, nil)
			return map[string]any{"ErrorCode": r.ErrorCode, "assigned": assigned(r), "leave": leave}
		}},
		{"ConsumerGroupHeartbeat", "fenced epoch, unknown member", func(e *Env) any {
			e.CreateTopic("cg-fence", 1)
			r := joinConsumer(e, "g-cg-fence", []string{"cg-fence"}, nil)
			return map[string]any{
				"fenced":  consumerHeartbeat(e, "g-cg-fence", memberA, r.MemberEpoch+5, nil, nil).ErrorCode,
				"unknown": consumerHeartbeat(e, "g-cg-fence", memberB, 1, nil, nil).ErrorCode,
			}
		}},
		{"ConsumerGroupHeartbeat", "regex subscription", func(e *Env) any {
			e.CreateTopic("cg-rx-a", 1)
			e.CreateTopic("cg-rx-b", 2)
			r := joinConsumer(e, "g-cg-rx", nil, sp("cg-rx-.*"))
			e.waitFor("3 partitions assigned", func() bool {
				if r.ErrorCode != 0 || assigned(r) == 3 {
					return true
				}
				r = consumerHeartbeat(e, "g-cg-rx", memberA, r.MemberEpoch, nil, nil)
				return false
			})
			return map[string]any{"ErrorCode": r.ErrorCode, "assigned": assigned(r)}
		}},
		{"ConsumerGroupHeartbeat", "invalid regex, no subscription, empty member id, unknown assignor", func(e *Env) any {
			findCoordinator(e, "g-cg-bad", 0)
			bad := consumerHeartbeat(e, "g-cg-bad", memberA, 0, nil, sp("cg-[")).ErrorCode
			none := consumerHeartbeat(e, "g-cg-bad", memberA, 0, nil, nil).ErrorCode
			empty := consumerHeartbeat(e, "g-cg-bad", "", 0, []string{"x"}, nil).ErrorCode
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g-cg-bad", memberB, 30000
			req.SubscribedTopicNames, req.ServerAssignor = []string{"x"}, sp("no-such-assignor")
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return map[string]any{"badRegex": bad, "noSubscription": none, "emptyMemberID": empty,
				"assignor": Do[*kmsg.ConsumerGroupHeartbeatResponse](e, req).ErrorCode}
		}},
		{"ConsumerGroupHeartbeat", "join a classic group that has a member", func(e *Env) any {
			e.CreateTopic("cg-classic", 1)
			joinedGroup(e, "g-cg-classic")
			return consumerHeartbeat(e, "g-cg-classic", memberA, 0, []string{"cg-classic"}, nil).ErrorCode
		}},
		{"OffsetCommit", "KIP-848 member commits at its previous epoch after a rebalance (KIP-1251)", func(e *Env) any {
			// The race of KafkaConsumer.close(): a heartbeat moved the
			// member to the next epoch, the commit it sends carries the
			// one before.
			const g, topic = "g-cg-oldepoch", "cg-oldepoch"
			e.CreateTopic(topic, 2)
			r := joinConsumer(e, g, []string{topic}, nil)
			e.waitFor("both partitions assigned to A", func() bool {
				if r.ErrorCode != 0 || assigned(r) == 2 {
					return true
				}
				r = consumerHeartbeat(e, g, memberA, r.MemberEpoch, nil, nil)
				return false
			})
			if r.ErrorCode != 0 {
				e.fail("setup: ConsumerGroupHeartbeat: %s", errName(r.ErrorCode))
			}
			old := r.MemberEpoch
			if b := consumerHeartbeat(e, g, memberB, 0, []string{topic}, nil); b.ErrorCode != 0 {
				e.fail("setup: B joins: %s", errName(b.ErrorCode))
			}
			// A revokes one partition and acknowledges it: its epoch moves on.
			var kept int32 = -1
			e.waitFor("A at a newer epoch holding one partition", func() bool {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberID, req.MemberEpoch = g, memberA, r.MemberEpoch
				if r.Assignment != nil {
					req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
					for _, at := range r.Assignment.Topics {
						t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
						t.TopicID, t.Partitions = at.TopicID, at.Partitions
						req.Topics = append(req.Topics, t)
						if len(at.Partitions) == 1 {
							kept = at.Partitions[0]
						}
					}
				}
				next := Do[*kmsg.ConsumerGroupHeartbeatResponse](e, req)
				if next.ErrorCode != 0 {
					e.fail("setup: A heartbeat: %s", errName(next.ErrorCode))
				}
				if next.Assignment == nil {
					next.Assignment = r.Assignment
				}
				r = next
				return r.MemberEpoch > old && kept >= 0 && assigned(r) == 1
			})
			commit := func(epoch, part int32) int16 {
				req := offsetCommitReq(g, memberA, epoch, topic, part, 5)
				req.Topics[0].TopicID = e.TopicID(topic)
				c := Do[*kmsg.OffsetCommitResponse](e, req)
				return c.Topics[0].Partitions[0].ErrorCode
			}
			return map[string]any{
				"keptAtPreviousEpoch":  commit(old, kept),
				"givenAtPreviousEpoch": commit(old, 1-kept),
				"keptAtCurrentEpoch":   commit(r.MemberEpoch, kept),
				"keptAtNextEpoch":      commit(r.MemberEpoch+1, kept),
			}
		}},
		{"ConsumerGroupDescribe", "a KIP-848 group with one member", func(e *Env) any {
			e.CreateTopic("cgd-one", 2)
			r := joinConsumer(e, "g-cgd-one", []string{"cgd-one"}, nil)
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{"g-cgd-one"}
			d := Do[*kmsg.ConsumerGroupDescribeResponse](e, req)
			out := map[string]any{"ErrorCode": d.Groups[0].ErrorCode, "State": d.Groups[0].State, "AssignorName": d.Groups[0].AssignorName,
				"members": len(d.Groups[0].Members), "epochsEqual": d.Groups[0].Epoch == d.Groups[0].AssignmentEpoch, "memberEpoch": r.MemberEpoch == d.Groups[0].Epoch}
			if len(d.Groups[0].Members) == 1 {
				m := d.Groups[0].Members[0]
				out["member"] = map[string]any{"MemberType": m.MemberType, "SubscribedTopics": m.SubscribedTopics, "SubscribedTopicRegex": m.SubscribedTopicRegex,
					"InstanceID": m.InstanceID, "RackID": m.RackID, "ClientID": m.ClientID, "assigned": len(m.Assignment.TopicPartitions)}
			}
			return out
		}},

		// Client quotas
		{"AlterClientQuotas", "user and client-id, then describe exact", func(e *Env) any {
			alter := alterQuota(e, false, quotaEntity("user", "q-alice", "client-id", "q-app"), "producer_byte_rate", 1024, false)
			var d *kmsg.DescribeClientQuotasResponse
			e.waitFor("the quota", func() bool {
				d = describeQuota(e, true, "user", 0, "q-alice", "client-id", 0, "q-app")
				return len(d.Entries) > 0
			})
			return map[string]any{"alter": alter, "describe": d}
		}},
		{"AlterClientQuotas", "validate only", func(e *Env) any {
			alter := alterQuota(e, true, quotaEntity("user", "q-val"), "consumer_byte_rate", 2048, false)
			return map[string]any{"alter": alter, "describe": describeQuota(e, false, "user", 0, "q-val")}
		}},
		{"AlterClientQuotas", "unknown key, negative value, ip with user, unknown entity type", func(e *Env) any {
			return map[string]any{
				"unknownKey": alterQuota(e, false, quotaEntity("user", "q-err"), "no_such_rate", 1, false),
				"negative":   alterQuota(e, false, quotaEntity("user", "q-err"), "producer_byte_rate", -5, false),
				"ipUser":     alterQuota(e, false, quotaEntity("user", "q-err", "ip", "127.0.0.1"), "producer_byte_rate", 5, false),
				"badType":    alterQuota(e, false, quotaEntity("nobody", "q-err"), "producer_byte_rate", 5, false),
				"badIP":      alterQuota(e, false, quotaEntity("ip", "not-an-ip"), "connection_creation_rate", 5, false),
			}
		}},
		{"AlterClientQuotas", "default user, then remove", func(e *Env) any {
			set := alterQuota(e, false, quotaEntity("user", ""), "request_percentage", 50, false)
			var d *kmsg.DescribeClientQuotasResponse
			e.waitFor("the default quota", func() bool {
				d = describeQuota(e, false, "user", 1, nil)
				return len(d.Entries) > 0
			})
			rm := alterQuota(e, false, quotaEntity("user", ""), "request_percentage", 0, true)
			var after *kmsg.DescribeClientQuotasResponse
			e.waitFor("no default quota", func() bool {
				after = describeQuota(e, false, "user", 1, nil)
				return len(after.Entries) == 0
			})
			return map[string]any{"set": set, "describe": d, "remove": rm, "after": after}
		}},
		{"DescribeClientQuotas", "any client-id, unknown entity type, ip quota", func(e *Env) any {
			alterQuota(e, false, quotaEntity("client-id", "q-any"), "producer_byte_rate", 4096, false)
			alterQuota(e, false, quotaEntity("ip", "127.0.0.9"), "connection_creation_rate", 10, false)
			var any2 *kmsg.DescribeClientQuotasResponse
			e.waitFor("the client-id quota", func() bool {
				any2 = describeQuota(e, false, "client-id", 2, nil)
				return len(any2.Entries) > 0
			})
			var ip *kmsg.DescribeClientQuotasResponse
			e.waitFor("the ip quota", func() bool {
				ip = describeQuota(e, false, "ip", 0, "127.0.0.9")
				return len(ip.Entries) > 0
			})
			return map[string]any{"anyClient": any2, "unknownType": describeQuota(e, false, "nobody", 2, nil), "ip": ip,
				"ipAndUser": describeQuota(e, false, "ip", 2, nil, "user", 2, nil).ErrorCode}
		}},

		// ACLs, authorizer on (super.users=User:ANONYMOUS)
		{"CreateACLs", "topic and prefixed group ACLs, then describe", func(e *Env) any {
			req := kmsg.NewPtrCreateACLsRequest()
			req.Creations = append(req.Creations,
				aclCreation(2, "acl-t", 3, "User:alice", 3, 3),   // topic literal, READ, ALLOW
				aclCreation(3, "acl-g-", 4, "User:alice", 3, 3),  // group prefixed
				aclCreation(2, "acl-t", 3, "User:mallory", 4, 2)) // WRITE, DENY
			c := Do[*kmsg.CreateACLsResponse](e, req)
			var d *kmsg.DescribeACLsResponse
			e.waitFor("the ACLs", func() bool {
				d = describeACLs(e, 1, nil, 1, sp("User:alice"))
				return len(d.Resources) == 2
			})
			return map[string]any{"create": c, "describe": d, "literal": describeACLs(e, 2, sp("acl-t"), 3, nil), "match": describeACLs(e, 3, sp("acl-g-x"), 2, nil)}
		}},
		{"CreateACLs", "invalid: ANY type, MATCH pattern, bad principal, cluster with another name, ANY operation", func(e *Env) any {
			out := map[string]any{}
			for name, c := range map[string]kmsg.CreateACLsRequestCreation{
				"anyType":      aclCreation(1, "x", 3, "User:a", 3, 3),
				"matchPattern": aclCreation(2, "x", 2, "User:a", 3, 3),
				"badPrincipal": aclCreation(2, "x", 3, "nocolon", 3, 3),
				"clusterName":  aclCreation(4, "not-kafka-cluster", 3, "User:a", 7, 3),
				"anyOperation": aclCreation(2, "x", 3, "User:a", 1, 3),
			} {
				req := kmsg.NewPtrCreateACLsRequest()
				req.Creations = append(req.Creations, c)
				out[name] = Do[*kmsg.CreateACLsResponse](e, req).Results
			}
			return out
		}},
		{"DeleteACLs", "delete matching one principal", func(e *Env) any {
			req := kmsg.NewPtrCreateACLsRequest()
			req.Creations = append(req.Creations, aclCreation(2, "acl-del", 3, "User:bob", 3, 3), aclCreation(2, "acl-del", 3, "User:carol", 3, 3))
			Do[*kmsg.CreateACLsResponse](e, req)
			e.waitFor("the ACLs", func() bool { return len(describeACLs(e, 2, sp("acl-del"), 3, nil).Resources) == 1 })
			del := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = 2, sp("acl-del"), 3
			f.Principal, f.Operation, f.PermissionType = sp("User:bob"), 1, 1
			del.Filters = append(del.Filters, f)
			d := Do[*kmsg.DeleteACLsResponse](e, del)
			var after *kmsg.DescribeACLsResponse
			e.waitFor("one ACL left", func() bool {
				after = describeACLs(e, 2, sp("acl-del"), 3, nil)
				return len(after.Resources) == 1 && len(after.Resources[0].ACLs) == 1
			})
			return map[string]any{"delete": d, "after": after}
		}},
		{"DescribeCluster", "with authorized operations (super user)", func(e *Env) any {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeClusterAuthorizedOperations = true
			return Do[*kmsg.DescribeClusterResponse](e, req).ClusterAuthorizedOperations
		}},
		{"Metadata", "topic authorized operations (super user)", func(e *Env) any {
			e.CreateTopic("md-ops", 1)
			req := metadataReq(false, "md-ops")
			req.IncludeTopicAuthorizedOperations = true
			return Do[*kmsg.MetadataResponse](e, req).Topics[0].AuthorizedOperations
		}},

		// SCRAM
		{"AlterUserSCRAMCredentials", "upsert SHA-256 and SHA-512, describe, delete one", func(e *Env) any {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			for _, mech := range []int8{1, 2} {
				up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				up.Name, up.Mechanism, up.Iterations = "scram-u", mech, 8192
				up.Salt, up.SaltedPassword = []byte("salt"), []byte("0123456789abcdef0123456789abcdef")
				if mech == 2 {
					up.SaltedPassword = append(up.SaltedPassword, up.SaltedPassword...)
				}
				req.Upsertions = append(req.Upsertions, up)
			}
			up := Do[*kmsg.AlterUserSCRAMCredentialsResponse](e, req)
			d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = "scram-u"
			d.Users = append(d.Users, u)
			var desc *kmsg.DescribeUserSCRAMCredentialsResponse
			e.waitFor("both credentials described", func() bool {
				desc = Do[*kmsg.DescribeUserSCRAMCredentialsResponse](e, d)
				return len(desc.Results) == 1 && len(desc.Results[0].CredentialInfos) == 2
			})
			del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			dd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			dd.Name, dd.Mechanism = "scram-u", 2
			del.Deletions = append(del.Deletions, dd)
			return map[string]any{"upsert": up, "describe": desc, "delete": Do[*kmsg.AlterUserSCRAMCredentialsResponse](e, del)}
		}},
		{"AlterUserSCRAMCredentials", "same user twice in one request, empty name", func(e *Env) any {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			for _, name := range []string{"scram-dup", "scram-dup", ""} {
				up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				up.Name, up.Mechanism, up.Iterations = name, 1, 8192
				up.Salt, up.SaltedPassword = []byte("salt"), []byte("0123456789abcdef0123456789abcdef")
				req.Upsertions = append(req.Upsertions, up)
			}
			return Do[*kmsg.AlterUserSCRAMCredentialsResponse](e, req)
		}},

		// Dynamic broker configs, group configs
		{"IncrementalAlterConfigs", "per-broker dynamic config, describe with synonyms", func(e *Env) any {
			set := incAlterBroker(e, "1", "log.cleaner.threads", "2", 0)
			var d *kmsg.DescribeConfigsResponse
			// Kafka applies the config when broker 1 replays the controller's
			// record: seconds on a busy machine, so wait for it rather than
			// compare whatever a fixed delay left.
			e.waitFor("the per-broker config applied", func() bool {
				d = describeConfigsSyn(e, 4, "1", "log.cleaner.threads")
				return len(d.Resources) == 1 && len(d.Resources[0].Configs) == 1 && d.Resources[0].Configs[0].Value != nil && *d.Resources[0].Configs[0].Value == "2"
			})
			del := incAlterBroker(e, "1", "log.cleaner.threads", "", 1)
			return map[string]any{"set": set, "describe": d, "delete": del}
		}},
		{"IncrementalAlterConfigs", "group configs: share and consumer keys, bad value, unknown key", func(e *Env) any {
			findCoordinator(e, "g-gc", 0)
			ok := groupConfig(e, "g-gc", "share.record.lock.duration.ms", "20000")
			var d *kmsg.DescribeConfigsResponse
			e.waitFor("the group config", func() bool {
				d = describeConfigs(e, 32, "g-gc", "share.record.lock.duration.ms", "share.auto.offset.reset", "consumer.session.timeout.ms")
				for _, c := range d.Resources[0].Configs {
					if c.Name == "share.record.lock.duration.ms" && c.Value != nil && *c.Value == "20000" {
						return true
					}
				}
				return false
			})
			return map[string]any{"set": ok, "describe": d,
				"outOfRange": groupConfig(e, "g-gc", "share.record.lock.duration.ms", "1"),
				"badEnum":    groupConfig(e, "g-gc", "share.auto.offset.reset", "middle"),
				"unknown":    groupConfig(e, "g-gc", "no.such.group.config", "1")}
		}},
		{"ElectLeaders", "unclean election on a healthy partition", func(e *Env) any {
			e.CreateTopic("el-unclean", 1)
			req := kmsg.NewPtrElectLeadersRequest()
			req.ElectionType, req.TimeoutMillis = 1, 10000
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = "el-unclean", []int32{0}
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.ElectLeadersResponse](e, req)
		}},
		{"ListPartitionReassignments", "named partitions, one unknown topic", func(e *Env) any {
			e.CreateTopic("lpr", 1)
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			req.TimeoutMillis = 10000
			for _, n := range []string{"lpr", "lpr-nope"} {
				t := kmsg.NewListPartitionReassignmentsRequestTopic()
				t.Topic, t.Partitions = n, []int32{0}
				req.Topics = append(req.Topics, t)
			}
			return Do[*kmsg.ListPartitionReassignmentsResponse](e, req)
		}},
		{"AlterReplicaLogDirs", "to the replica's own directory, to an unknown directory, an unknown topic", func(e *Env) any {
			e.CreateTopic("arld", 1)
			dreq := kmsg.NewPtrDescribeLogDirsRequest()
			dirs := Do[*kmsg.DescribeLogDirsResponse](e, dreq)
			if len(dirs.Dirs) != 1 {
				e.fail("setup: %d log dirs", len(dirs.Dirs))
			}
			alter := func(dir, topic string) any {
				req := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = dir
				t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				t.Topic, t.Partitions = topic, []int32{0}
				d.Topics = append(d.Topics, t)
				req.Dirs = append(req.Dirs, d)
				return Do[*kmsg.AlterReplicaLogDirsResponse](e, req)
			}
			return map[string]any{
				"own":          alter(dirs.Dirs[0].Dir, "arld"),
				"unknownDir":   alter("/nonexistent-gregor-dir", "arld"),
				"unknownTopic": alter(dirs.Dirs[0].Dir, "arld-nope"),
			}
		}},
		{"DescribeLogDirs", "unknown topic and partition", func(e *Env) any {
			e.CreateTopic("dld-p", 1)
			req := kmsg.NewPtrDescribeLogDirsRequest()
			for _, n := range []string{"dld-p", "dld-nope"} {
				t := kmsg.NewDescribeLogDirsRequestTopic()
				t.Topic, t.Partitions = n, []int32{0, 4}
				req.Topics = append(req.Topics, t)
			}
			return Do[*kmsg.DescribeLogDirsResponse](e, req)
		}},
	}
}
