package conformance

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Env is one broker as a scenario sees it. Its helpers end the scenario
// (with the error as its answer) when a setup step fails.
type Env struct {
	// Name is "kafka" or "gregor".
	Name string
	addr string
	conn *rawConn
	// versions is, per API key, the highest version both brokers support:
	// every request goes at the same version to both.
	versions map[int16]int16
	// shareEpoch is the next share session epoch after shareFetched.
	shareEpoch int32
}

// failure ends a scenario early; its text is the scenario's answer.
type failure struct{ msg string }

func (e *Env) fail(format string, args ...any) {
	panic(failure{fmt.Sprintf(format, args...)})
}

// Version is the version requests of key are sent at.
func (e *Env) Version(key kmsg.Key) int16 {
	v, ok := e.versions[key.Int16()]
	if !ok {
		e.fail("%s: not supported by both brokers", key.Name())
	}
	return v
}

// Try sends req at the common version; a connection error is returned (and
// the next request dials again).
func (e *Env) Try(req kmsg.Request) (kmsg.Response, error) {
	req.SetVersion(e.Version(kmsg.Key(req.Key())))
	return e.TryV(req, req.GetVersion())
}

// TryV sends req at version v as is.
func (e *Env) TryV(req kmsg.Request, v int16) (kmsg.Response, error) {
	req.SetVersion(v)
	if e.conn == nil {
		c, err := dialRaw(e.addr)
		if err != nil {
			return nil, err
		}
		e.conn = c
	}
	resp, err := e.conn.do(req)
	if err != nil {
		e.conn.close()
		e.conn = nil
	}
	return resp, err
}

func (e *Env) close() {
	if e.conn != nil {
		e.conn.close()
		e.conn = nil
	}
}

// Do is Try that fails the scenario on a connection error.
func Do[R kmsg.Response](e *Env, req kmsg.Request) R {
	resp, err := e.Try(req)
	return as[R](e, req, resp, err)
}

// DoV is Do at version v.
func DoV[R kmsg.Response](e *Env, req kmsg.Request, v int16) R {
	resp, err := e.TryV(req, v)
	return as[R](e, req, resp, err)
}

func as[R kmsg.Response](e *Env, req kmsg.Request, resp kmsg.Response, err error) R {
	if err != nil {
		e.fail("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	r, ok := resp.(R)
	if !ok {
		e.fail("%s: answer of type %T", kmsg.NameForKey(req.Key()), resp)
	}
	return r
}

// waitFor polls cond (every 50 ms, at most 20 s) until it holds.
func (e *Env) waitFor(what string, cond func() bool) {
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.fail("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CreateTopic creates name with parts partitions (replication factor 1) and
// configs, and waits until every partition has a leader that answers
// ListOffsets.
func (e *Env) CreateTopic(name string, parts int32, configs ...string) {
	resp := Do[*kmsg.CreateTopicsResponse](e, createTopicsReq(name, parts, 1, configs...))
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		e.fail("setup: CreateTopics %s: %s", name, errName(firstTopicErr(resp)))
	}
	e.waitTopic(name, parts)
}

func firstTopicErr(r *kmsg.CreateTopicsResponse) int16 {
	if len(r.Topics) == 0 {
		return -1
	}
	return r.Topics[0].ErrorCode
}

func (e *Env) waitTopic(name string, parts int32) {
	e.waitFor("topic "+name+" to have leaders", func() bool {
		m := Do[*kmsg.MetadataResponse](e, metadataReq(false, name))
		if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || int32(len(m.Topics[0].Partitions)) != parts {
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
			lo := Do[*kmsg.ListOffsetsResponse](e, listOffsetsReq(name, p.Partition, -1, 0))
			if len(lo.Topics) != 1 || lo.Topics[0].Partitions[0].ErrorCode != 0 {
				return false
			}
		}
		return true
	})
}

// TopicID is name's topic id (zero if unknown).
func (e *Env) TopicID(name string) [16]byte {
	m := Do[*kmsg.MetadataResponse](e, metadataReq(false, name))
	if len(m.Topics) != 1 {
		return [16]byte{}
	}
	return m.Topics[0].TopicID
}

func createTopicsReq(name string, parts int32, rf int16, configs ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = configs[i]
		v := configs[i+1]
		c.Value = &v
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	return req
}

func metadataReq(autoCreate bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = autoCreate
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func listOffsetsReq(topic string, part int32, ts int64, isolation int8) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch = part, ts, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// ListOffsets is one partition's ListOffsets answer.
func (e *Env) ListOffsets(topic string, part int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	r := Do[*kmsg.ListOffsetsResponse](e, listOffsetsReq(topic, part, ts, 0))
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		e.fail("ListOffsets: %d topics", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

func produceReq(acks int16, txnID *string, topic string, part int32, b []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 10000
	req.TransactionID = txnID
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = part
	p.Records = b
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// Produce sends one batch with acks -1 and returns the partition's answer.
func (e *Env) Produce(topic string, part int32, b []byte) kmsg.ProduceResponseTopicPartition {
	return e.produce(produceReq(-1, nil, topic, part, b))
}

func (e *Env) produce(req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	r := Do[*kmsg.ProduceResponse](e, req)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		e.fail("Produce: %d topics in the answer", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

// MustProduce is Produce that fails the scenario unless the batch is
// appended.
func (e *Env) MustProduce(topic string, part int32, b []byte) int64 {
	p := e.Produce(topic, part, b)
	if p.ErrorCode != 0 {
		e.fail("setup: Produce %s[%d]: %s", topic, part, errName(p.ErrorCode))
	}
	return p.BaseOffset
}

func fetchReq(topic string, id [16]byte, part int32, offset int64, maxBytes int32, isolation int8) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.IsolationLevel = isolation
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	t.TopicID = id
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = part, offset, maxBytes
	p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.LogStartOffset = -1, -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// Fetch fetches one partition from offset (read_uncommitted, 1 MiB).
func (e *Env) Fetch(topic string, part int32, offset int64) *kmsg.FetchResponse {
	return Do[*kmsg.FetchResponse](e, fetchReq(topic, e.TopicID(topic), part, offset, 1<<20, 0))
}

// InitProducerID returns a producer id and epoch (txnID nil: idempotent).
func (e *Env) InitProducerID(txnID *string) (int64, int16) {
	if txnID != nil {
		findCoordinator(e, *txnID, 1) // creates __transaction_state on Kafka
	}
	r := e.initPID(txnID, 60000)
	if r.ErrorCode != 0 {
		e.fail("setup: InitProducerId: %s", errName(r.ErrorCode))
	}
	return r.ProducerID, r.ProducerEpoch
}

func (e *Env) initPID(txnID *string, timeout int32) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = timeout
	req.ProducerID, req.ProducerEpoch = -1, -1
	var r *kmsg.InitProducerIDResponse
	// The transaction coordinator may still be loading.
	e.waitFor("InitProducerId", func() bool {
		r = Do[*kmsg.InitProducerIDResponse](e, req)
		// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
		// NOT_COORDINATOR (its partition not loaded yet), CONCURRENT_TRANSACTIONS
		return r.ErrorCode != 15 && r.ErrorCode != 14 && r.ErrorCode != 16 && r.ErrorCode != 51
	})
	return r
}
