package conformance

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenarios of the data path: Produce, Fetch, ListOffsets, DeleteRecords,
// OffsetForLeaderEpoch, idempotent producers.

func sp(s string) *string { return &s }

func dataScenarios() []Scenario {
	return []Scenario{
		{"Produce", "acks=-1, 3 records to a new topic", func(e *Env) any {
			e.CreateTopic("p-acks-all", 1)
			return e.Produce("p-acks-all", 0, batch(plainOpts(), vals("v", 3)...))
		}},
		{"Produce", "acks=1, second batch gets the next offset", func(e *Env) any {
			e.CreateTopic("p-acks-one", 1)
			e.MustProduce("p-acks-one", 0, batch(plainOpts(), vals("a", 2)...))
			return e.produce(produceReq(1, nil, "p-acks-one", 0, batch(plainOpts(), vals("b", 2)...)))
		}},
		{"Produce", "acks=0: no answer, records land", func(e *Env) any {
			e.CreateTopic("p-acks-zero", 1)
			if _, err := e.Try(produceReq(0, nil, "p-acks-zero", 0, batch(plainOpts(), vals("z", 4)...))); err != nil {
				e.fail("%v", err)
			}
			var lo kmsg.ListOffsetsResponseTopicPartition
			e.waitFor("acks=0 records", func() bool { lo = e.ListOffsets("p-acks-zero", 0, -1); return lo.Offset == 4 })
			return lo
		}},
		{"Produce", "invalid acks=2", func(e *Env) any {
			e.CreateTopic("p-acks-two", 1)
			r, err := e.Try(produceReq(2, nil, "p-acks-two", 0, batch(plainOpts(), vals("x", 1)...)))
			if err != nil {
				return "connection: " + err.Error()
			}
			return r
		}},
		{"Produce", "unknown topic (no auto-create on produce)", func(e *Env) any {
			return e.Produce("p-no-such-topic", 0, batch(plainOpts(), vals("x", 1)...))
		}},
		{"Produce", "partition out of range", func(e *Env) any {
			e.CreateTopic("p-bad-part", 1)
			return e.Produce("p-bad-part", 7, batch(plainOpts(), vals("x", 1)...))
		}},
		{"Produce", "batch larger than max.message.bytes", func(e *Env) any {
			e.CreateTopic("p-too-large", 1, "max.message.bytes", "200")
			return e.Produce("p-too-large", 0, batch(plainOpts(), rec{value: []byte(strings.Repeat("x", 300))}))
		}},
		{"Produce", "LogAppendTime topic", func(e *Env) any {
			e.CreateTopic("p-log-append", 1, "message.timestamp.type", "LogAppendTime")
			p := e.Produce("p-log-append", 0, batch(plainOpts(), vals("v", 2)...))
			return map[string]any{"produce": p, "fetch": e.Fetch("p-log-append", 0, 0)}
		}},
		{"Produce", "CreateTime older than message.timestamp.before.max.ms", func(e *Env) any {
			e.CreateTopic("p-old-ts", 1, "message.timestamp.before.max.ms", "60000")
			return e.Produce("p-old-ts", 0, batch(plainOpts(), vals("v", 1)...))
		}},
		{"Produce", "corrupt CRC", func(e *Env) any {
			e.CreateTopic("p-crc", 1)
			o := plainOpts()
			o.corruptCRC = true
			return e.Produce("p-crc", 0, batch(o, vals("v", 1)...))
		}},
		{"Produce", "null key on a compacted topic", func(e *Env) any {
			e.CreateTopic("p-compact-nokey", 1, "cleanup.policy", "compact")
			return e.Produce("p-compact-nokey", 0, batch(plainOpts(), rec{value: []byte("v")}))
		}},
		{"Produce", "two partitions, one unknown", func(e *Env) any {
			e.CreateTopic("p-two-parts", 2)
			req := produceReq(-1, nil, "p-two-parts", 0, batch(plainOpts(), vals("a", 1)...))
			p := kmsg.NewProduceRequestTopicPartition()
			p.Partition = 5
			p.Records = batch(plainOpts(), vals("b", 1)...)
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
			return Do[*kmsg.ProduceResponse](e, req)
		}},
		{"Produce", "invalid topic name", func(e *Env) any {
			return e.Produce("bad name!", 0, batch(plainOpts(), vals("v", 1)...))
		}},
		{"Produce", "transactional batch without a transactional id", func(e *Env) any {
			e.CreateTopic("p-txn-noid", 1)
			pid, epoch := e.InitProducerID(nil)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
			return e.Produce("p-txn-noid", 0, batch(o, vals("v", 1)...))
		}},
		{"Produce", "headers, null and empty keys and values round trip", func(e *Env) any {
			e.CreateTopic("p-headers", 1)
			e.MustProduce("p-headers", 0, batch(plainOpts(),
				rec{key: nil, value: []byte("nullkey")},
				rec{key: []byte{}, value: []byte{}, tsDelta: 5},
				rec{key: []byte("k"), value: nil, headers: []kmsg.Header{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}}))
			return e.Fetch("p-headers", 0, 0)
		}},

		// Fetch
		{"Fetch", "from offset 0 after two batches", func(e *Env) any {
			e.CreateTopic("f-basic", 1)
			e.MustProduce("f-basic", 0, batch(plainOpts(), vals("a", 2)...))
			e.MustProduce("f-basic", 0, batch(plainOpts(), vals("b", 3)...))
			return e.Fetch("f-basic", 0, 0)
		}},
		{"Fetch", "in the middle of a batch", func(e *Env) any {
			e.CreateTopic("f-middle", 1)
			e.MustProduce("f-middle", 0, batch(plainOpts(), vals("a", 4)...))
			return e.Fetch("f-middle", 0, 2)
		}},
		{"Fetch", "at the high watermark", func(e *Env) any {
			e.CreateTopic("f-at-hw", 1)
			e.MustProduce("f-at-hw", 0, batch(plainOpts(), vals("a", 2)...))
			return e.Fetch("f-at-hw", 0, 2)
		}},
		{"Fetch", "beyond the high watermark", func(e *Env) any {
			e.CreateTopic("f-beyond", 1)
			e.MustProduce("f-beyond", 0, batch(plainOpts(), vals("a", 2)...))
			return e.Fetch("f-beyond", 0, 10)
		}},
		{"Fetch", "negative offset", func(e *Env) any {
			e.CreateTopic("f-negative", 1)
			e.MustProduce("f-negative", 0, batch(plainOpts(), vals("a", 1)...))
			return e.Fetch("f-negative", 0, -5)
		}},
		{"Fetch", "below the log start offset", func(e *Env) any {
			e.CreateTopic("f-below-start", 1)
			e.MustProduce("f-below-start", 0, batch(plainOpts(), vals("a", 5)...))
			deleteRecords(e, "f-below-start", 0, 3)
			return e.Fetch("f-below-start", 0, 1)
		}},
		{"Fetch", "unknown topic id", func(e *Env) any {
			return Do[*kmsg.FetchResponse](e, fetchReq("f-unknown", [16]byte{1, 2, 3}, 0, 0, 1<<20, 0))
		}},
		{"Fetch", "partition out of range", func(e *Env) any {
			e.CreateTopic("f-bad-part", 1)
			return Do[*kmsg.FetchResponse](e, fetchReq("f-bad-part", e.TopicID("f-bad-part"), 4, 0, 1<<20, 0))
		}},
		{"Fetch", "full fetch naming a session it closes (epoch -1)", func(e *Env) any {
			e.CreateTopic("f-close-session", 1)
			e.MustProduce("f-close-session", 0, batch(plainOpts(), vals("a", 2)...))
			req := fetchReq("f-close-session", e.TopicID("f-close-session"), 0, 0, 1<<20, 0)
			req.SessionID, req.SessionEpoch = -1, -1 // as kafka-go's Client.Fetch sends
			full := Do[*kmsg.FetchResponse](e, req)
			req = fetchReq("f-close-session", e.TopicID("f-close-session"), 0, 0, 1<<20, 0)
			req.SessionID, req.SessionEpoch = 12345, -1
			unknown := Do[*kmsg.FetchResponse](e, req)
			return map[string]any{"session -1": full, "unknown session": unknown}
		}},
		{"Fetch", "incremental fetch of an unknown session", func(e *Env) any {
			e.CreateTopic("f-incremental", 1)
			req := fetchReq("f-incremental", e.TopicID("f-incremental"), 0, 0, 1<<20, 0)
			req.SessionID, req.SessionEpoch = 12345, 1
			return Do[*kmsg.FetchResponse](e, req)
		}},
		{"Fetch", "a session: made, idle, after appends, a new position, a forgotten partition, a replayed epoch, v12 in a v13 session, closed", func(e *Env) any {
			e.CreateTopic("f-session", 3)
			id := e.TopicID("f-session")
			e.MustProduce("f-session", 1, batch(plainOpts(), vals("a", 1)...))
			// req is a v13 Fetch in session sid at epoch, of the
			// partitions at the given offsets, forgetting forget.
			req := func(sid, epoch int32, offsets [][2]int64, forget ...int32) *kmsg.FetchRequest {
				r := fetchReq("f-session", id, 0, 0, 1<<20, 0)
				r.SessionID, r.SessionEpoch = sid, epoch
				r.Topics[0].Partitions = r.Topics[0].Partitions[:0]
				for _, o := range offsets {
					p := kmsg.NewFetchRequestTopicPartition()
					p.Partition, p.FetchOffset, p.PartitionMaxBytes = int32(o[0]), o[1], 1<<20
					p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.LogStartOffset = -1, -1, -1
					r.Topics[0].Partitions = append(r.Topics[0].Partitions, p)
				}
				if len(offsets) == 0 {
					r.Topics = nil
				}
				if len(forget) > 0 {
					r.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "f-session", TopicID: id, Partitions: forget}}
				}
				return r
			}
			out := map[string]any{}
			full := DoV[*kmsg.FetchResponse](e, req(0, 0, [][2]int64{{0, 0}, {1, 0}, {2, 0}}), 13)
			out["1 full, epoch 0"] = full
			sid := full.SessionID
			out["2 epoch 1, partition 1 at 1: idle"] = DoV[*kmsg.FetchResponse](e, req(sid, 1, [][2]int64{{1, 1}}), 13)
			e.MustProduce("f-session", 2, batch(plainOpts(), vals("b", 1)...))
			e.MustProduce("f-session", 1, batch(plainOpts(), vals("c", 1)...))
			out["3 epoch 2 after appends to 2 and 1"] = DoV[*kmsg.FetchResponse](e, req(sid, 2, nil), 13)
			out["4 epoch 3, the same positions"] = DoV[*kmsg.FetchResponse](e, req(sid, 3, nil), 13)
			out["5 epoch 3 again"] = DoV[*kmsg.FetchResponse](e, req(sid, 3, nil), 13)
			out["6 epoch 4, forget 2, partition 1 at 2"] = DoV[*kmsg.FetchResponse](e, req(sid, 4, [][2]int64{{1, 2}}, 2), 13)
			out["7 epoch 5, partition 2 again at 1"] = DoV[*kmsg.FetchResponse](e, req(sid, 5, [][2]int64{{2, 1}}), 13)
			out["8 epoch 6 at v12"] = DoV[*kmsg.FetchResponse](e, req(sid, 6, nil), 12)
			out["9 epoch -1 closes"] = DoV[*kmsg.FetchResponse](e, req(sid, -1, [][2]int64{{0, 0}}), 13)
			out["10 epoch 6 of the closed session"] = DoV[*kmsg.FetchResponse](e, req(sid, 6, nil), 13)
			return out
		}},
		{"Fetch", "partition max bytes 1 still returns the first batch", func(e *Env) any {
			e.CreateTopic("f-tiny", 1)
			e.MustProduce("f-tiny", 0, batch(plainOpts(), vals("a", 2)...))
			e.MustProduce("f-tiny", 0, batch(plainOpts(), vals("b", 2)...))
			return Do[*kmsg.FetchResponse](e, fetchReq("f-tiny", e.TopicID("f-tiny"), 0, 0, 1, 0))
		}},
		{"Fetch", "current leader epoch ahead of the broker", func(e *Env) any {
			e.CreateTopic("f-epoch-ahead", 1)
			req := fetchReq("f-epoch-ahead", e.TopicID("f-epoch-ahead"), 0, 0, 1<<20, 0)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = 50
			return Do[*kmsg.FetchResponse](e, req)
		}},

		// ListOffsets
		{"ListOffsets", "latest (-1), earliest (-2), max timestamp (-3)", func(e *Env) any {
			e.CreateTopic("lo-specials", 1)
			e.MustProduce("lo-specials", 0, batch(plainOpts(), rec{value: []byte("a"), tsDelta: 0}, rec{value: []byte("b"), tsDelta: 500}, rec{value: []byte("c"), tsDelta: 100}))
			e.MustProduce("lo-specials", 0, batch(plainOpts(), rec{value: []byte("d"), tsDelta: 50}))
			return map[string]any{"-1": e.ListOffsets("lo-specials", 0, -1), "-2": e.ListOffsets("lo-specials", 0, -2), "-3": e.ListOffsets("lo-specials", 0, -3)}
		}},
		{"ListOffsets", "earliest local (-4) and latest tiered (-5)", func(e *Env) any {
			e.CreateTopic("lo-tiered", 1)
			e.MustProduce("lo-tiered", 0, batch(plainOpts(), vals("a", 3)...))
			return map[string]any{"-4": e.ListOffsets("lo-tiered", 0, -4), "-5": e.ListOffsets("lo-tiered", 0, -5)}
		}},
		{"ListOffsets", "by timestamp: between, exact, after all", func(e *Env) any {
			e.CreateTopic("lo-by-ts", 1)
			e.MustProduce("lo-by-ts", 0, batch(plainOpts(), rec{value: []byte("a")}, rec{value: []byte("b"), tsDelta: 100}, rec{value: []byte("c"), tsDelta: 200}))
			return map[string]any{"between": e.ListOffsets("lo-by-ts", 0, baseTS+50), "exact": e.ListOffsets("lo-by-ts", 0, baseTS+200), "after": e.ListOffsets("lo-by-ts", 0, baseTS+10000)}
		}},
		{"ListOffsets", "empty topic: latest, earliest, max timestamp", func(e *Env) any {
			e.CreateTopic("lo-empty", 1)
			return map[string]any{"-1": e.ListOffsets("lo-empty", 0, -1), "-2": e.ListOffsets("lo-empty", 0, -2), "-3": e.ListOffsets("lo-empty", 0, -3)}
		}},
		{"ListOffsets", "unknown topic and unknown partition", func(e *Env) any {
			e.CreateTopic("lo-parts", 1)
			return map[string]any{"topic": e.ListOffsets("lo-nope", 0, -1), "partition": e.ListOffsets("lo-parts", 3, -1)}
		}},
		{"ListOffsets", "read_committed latest with an open transaction", func(e *Env) any {
			e.CreateTopic("lo-open-txn", 1)
			e.MustProduce("lo-open-txn", 0, batch(plainOpts(), vals("a", 2)...))
			txn := "lo-open-txn-id"
			pid, epoch := e.InitProducerID(&txn)
			addPartitions(e, txn, pid, epoch, "lo-open-txn", 0)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0, transactional: true}
			e.produce(produceReq(-1, &txn, "lo-open-txn", 0, batch(o, vals("t", 3)...)))
			rc := Do[*kmsg.ListOffsetsResponse](e, listOffsetsReq("lo-open-txn", 0, -1, 1))
			ru := Do[*kmsg.ListOffsetsResponse](e, listOffsetsReq("lo-open-txn", 0, -1, 0))
			return map[string]any{"committed": rc, "uncommitted": ru}
		}},
		{"ListOffsets", "fenced current leader epoch", func(e *Env) any {
			e.CreateTopic("lo-epoch", 1)
			req := listOffsetsReq("lo-epoch", 0, -1, 0)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = 40
			return Do[*kmsg.ListOffsetsResponse](e, req)
		}},

		// DeleteRecords
		{"DeleteRecords", "before offset 2, then earliest", func(e *Env) any {
			e.CreateTopic("dr-basic", 1)
			e.MustProduce("dr-basic", 0, batch(plainOpts(), vals("a", 5)...))
			r := deleteRecords(e, "dr-basic", 0, 2)
			return map[string]any{"delete": r, "earliest": e.ListOffsets("dr-basic", 0, -2)}
		}},
		{"DeleteRecords", "beyond the high watermark", func(e *Env) any {
			e.CreateTopic("dr-beyond", 1)
			e.MustProduce("dr-beyond", 0, batch(plainOpts(), vals("a", 3)...))
			return deleteRecords(e, "dr-beyond", 0, 10)
		}},
		{"DeleteRecords", "offset -1 (to the high watermark)", func(e *Env) any {
			e.CreateTopic("dr-hw", 1)
			e.MustProduce("dr-hw", 0, batch(plainOpts(), vals("a", 3)...))
			r := deleteRecords(e, "dr-hw", 0, -1)
			return map[string]any{"delete": r, "fetch": e.Fetch("dr-hw", 0, 0)}
		}},
		{"DeleteRecords", "unknown topic, unknown partition", func(e *Env) any {
			e.CreateTopic("dr-parts", 1)
			return map[string]any{"topic": deleteRecords(e, "dr-nope", 0, 0), "partition": deleteRecords(e, "dr-parts", 9, 0)}
		}},

		// OffsetForLeaderEpoch
		{"OffsetForLeaderEpoch", "epoch 0, a later epoch, unknown partition", func(e *Env) any {
			e.CreateTopic("ofle", 1)
			e.MustProduce("ofle", 0, batch(plainOpts(), vals("a", 3)...))
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = "ofle"
			for _, pe := range [][2]int32{{0, 0}, {1, 0}} {
				p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				p.Partition, p.LeaderEpoch, p.CurrentLeaderEpoch = pe[0], pe[1], -1
				t.Partitions = append(t.Partitions, p)
			}
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.OffsetForLeaderEpochResponse](e, req)
		}},
		{"OffsetForLeaderEpoch", "requested epoch above the current one", func(e *Env) any {
			e.CreateTopic("ofle-ahead", 1)
			e.MustProduce("ofle-ahead", 0, batch(plainOpts(), vals("a", 3)...))
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = "ofle-ahead"
			p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			p.LeaderEpoch, p.CurrentLeaderEpoch = 7, -1
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.OffsetForLeaderEpochResponse](e, req)
		}},

		// Idempotent producers
		{"InitProducerId", "idempotent (no transactional id)", func(e *Env) any {
			return e.initPID(nil, 60000)
		}},
		{"Produce", "idempotent: duplicate of the last batch", func(e *Env) any {
			e.CreateTopic("idem-dup", 1)
			pid, epoch := e.InitProducerID(nil)
			o := batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0}
			first := e.Produce("idem-dup", 0, batch(o, vals("a", 3)...))
			dup := e.Produce("idem-dup", 0, batch(o, vals("a", 3)...))
			return map[string]any{"first": first, "dup": dup, "end": e.ListOffsets("idem-dup", 0, -1)}
		}},
		{"Produce", "idempotent: sequence gap", func(e *Env) any {
			e.CreateTopic("idem-gap", 1)
			pid, epoch := e.InitProducerID(nil)
			e.MustProduce("idem-gap", 0, batch(batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0}, vals("a", 2)...))
			return e.Produce("idem-gap", 0, batch(batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 5}, vals("b", 1)...))
		}},
		{"Produce", "idempotent: unknown producer id with sequence 0 and with 3", func(e *Env) any {
			e.CreateTopic("idem-unknown", 1)
			a := e.Produce("idem-unknown", 0, batch(batchOpts{producerID: 424242, producerEpoch: 0, baseSequence: 3}, vals("a", 1)...))
			b := e.Produce("idem-unknown", 0, batch(batchOpts{producerID: 434343, producerEpoch: 0, baseSequence: 0}, vals("a", 1)...))
			return map[string]any{"seq3": a, "seq0": b}
		}},
		{"Produce", "idempotent: older epoch after a newer one", func(e *Env) any {
			e.CreateTopic("idem-epoch", 1)
			pid, _ := e.InitProducerID(nil)
			e.MustProduce("idem-epoch", 0, batch(batchOpts{producerID: pid, producerEpoch: 3, baseSequence: 0}, vals("a", 1)...))
			return e.Produce("idem-epoch", 0, batch(batchOpts{producerID: pid, producerEpoch: 2, baseSequence: 1}, vals("b", 1)...))
		}},
		{"DescribeProducers", "after idempotent and plain batches", func(e *Env) any {
			e.CreateTopic("desc-producers", 1)
			pid, epoch := e.InitProducerID(nil)
			e.MustProduce("desc-producers", 0, batch(plainOpts(), vals("p", 1)...))
			e.MustProduce("desc-producers", 0, batch(batchOpts{producerID: pid, producerEpoch: epoch, baseSequence: 0}, vals("a", 3)...))
			req := kmsg.NewPtrDescribeProducersRequest()
			t := kmsg.NewDescribeProducersRequestTopic()
			t.Topic = "desc-producers"
			t.Partitions = []int32{0, 3}
			req.Topics = append(req.Topics, t)
			return Do[*kmsg.DescribeProducersResponse](e, req)
		}},
	}
}

func deleteRecords(e *Env, topic string, part int32, offset int64) *kmsg.DeleteRecordsResponse {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	p := kmsg.NewDeleteRecordsRequestTopicPartition()
	p.Partition, p.Offset = part, offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return Do[*kmsg.DeleteRecordsResponse](e, req)
}

// addPartitionsVersion: v4+ of AddPartitionsToTxn is broker to broker.
const addPartitionsVersion = 3

func addPartitionsReq(txn string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = txn, pid, epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic = topic
	t.Partitions = parts
	req.Topics = append(req.Topics, t)
	return req
}

func addPartitions(e *Env, txn string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnResponse {
	var r *kmsg.AddPartitionsToTxnResponse
	e.waitFor("AddPartitionsToTxn", func() bool {
		r = DoV[*kmsg.AddPartitionsToTxnResponse](e, addPartitionsReq(txn, pid, epoch, topic, parts...), addPartitionsVersion)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 51 { // CONCURRENT_TRANSACTIONS: a previous end still completing
					return false
				}
			}
		}
		return true
	})
	return r
}
