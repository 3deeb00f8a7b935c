package broker

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// seqConn sends requests one at a time on one connection and decodes the
// answers, so that every request is handled and answered by the reader
// (the path on which a connection reuses its request objects).
type seqConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func (rc *seqConn) do(clientID string, req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	rc.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, rc.corr)
	if _, err := rc.nc.Write(frame); err != nil {
		rc.t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rc.nc, size[:]); err != nil {
		rc.t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rc.nc, body); err != nil {
		rc.t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != rc.corr {
		rc.t.Fatalf("correlation id %d, want %d", corr, rc.corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body = body[4:]
	if resp.IsFlexible() {
		body = body[1:] // no tagged fields in the header
	}
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatal(err)
	}
	return resp
}

// TestConn_ReusedRequestsAnswerLikeNewOnes sends Produce and Fetch requests
// of different shapes, versions, client ids and transactional ids one
// after another on one connection, so that each decodes into what the one
// before left: every answer is exactly that of the request alone.
func TestConn_ReusedRequestsAnswerLikeNewOnes(t *testing.T) {
	br, addr := startBroker(t, "", nil)
	for _, name := range []string{"a", "bb"} {
		if _, err := br.createTopic(name, 3, nil); err != nil {
			t.Fatal(err)
		}
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rc := &seqConn{t: t, nc: nc}

	type part struct {
		topic     string
		partition int32
	}
	next := map[part]int64{} // the next offset of each partition
	produce := func(version int16, clientID string, parts ...part) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
		for _, p := range parts {
			if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != p.topic {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = p.topic
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p.partition
			rp.Records = makeBatch([]string{"x", "y"}, -1, -1, -1)
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp := rc.do(clientID, req).(*kmsg.ProduceResponse)
		i := 0
		if len(resp.Topics) != len(req.Topics) {
			t.Fatalf("v%d %v: %d topics answered, want %d", version, parts, len(resp.Topics), len(req.Topics))
		}
		for ti, st := range resp.Topics {
			if st.Topic != req.Topics[ti].Topic || len(st.Partitions) != len(req.Topics[ti].Partitions) {
				t.Fatalf("v%d %v: topic %d answered %+v", version, parts, ti, st)
			}
			for _, sp := range st.Partitions {
				p := parts[i]
				i++
				if sp.Partition != p.partition || sp.ErrorCode != 0 || sp.BaseOffset != next[p] || sp.ErrorMessage != nil {
					t.Fatalf("v%d %v: %s[%d] answered %+v, want base offset %d", version, parts, p.topic, p.partition, sp, next[p])
				}
				next[p] += 2
			}
		}
	}
	fetch := func(clientID string, p part) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.ReplicaID, req.SessionEpoch = 11, 0, 0, 1<<20, -1, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = p.topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p.partition, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := rc.do(clientID, req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != p.topic || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch %v: %+v", p, resp)
		}
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 || sp.HighWatermark != next[p] || (next[p] > 0) != (len(sp.RecordBatches) > 0) {
			t.Fatalf("fetch %v: %+v, want high watermark %d", p, sp, next[p])
		}
	}

	a0, a1, a2, b0, b2 := part{"a", 0}, part{"a", 1}, part{"a", 2}, part{"bb", 0}, part{"bb", 2}
	produce(9, "one", a0, a1, a2, b0, b2)
	produce(9, "one", b2)
	fetch("one", b2)
	produce(3, "two", a1)
	produce(12, "a-longer-client-id", a0, b0)
	fetch("", a2)
	produce(7, "two", a2, b0, b2)
	produce(9, "one", a0)
	fetch("one", part{"a", 1})
	produce(9, "one", a0, a1, a2, b0, b2)
}

// maxSmallProduceAllocs is what remains per small Produce (issue #16):
// kmsg's ProduceRequest decoder makes a new partitions list per topic (it
// zeroes the reused topics before reading into them; see
// docs/benchmarks.md). The topic name is no longer copied (reusable.decode).
const maxSmallProduceAllocs = 1

// TestConn_SmallProduceAllocations bounds the steady-state allocations of a
// single-record Produce answered on the reader (issue #16): the request,
// the response and its encoding reuse the connection's spare.
func TestConn_SmallProduceAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures allocations")
	}
	br, addr := startBroker(t, "", nil)
	if _, err := br.createTopic("small", 1, nil); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := produceReq("small", 0, makeBatch([]string{"v"}, -1, -1, -1))
	req.Version = 9
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)
	resp := make([]byte, 4096)
	roundTrip := func() {
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(nc, resp[:4]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(nc, resp[:binary.BigEndian.Uint32(resp[:4])]); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		roundTrip()
	}
	if n := testing.AllocsPerRun(500, roundTrip); n > maxSmallProduceAllocs {
		t.Fatalf("%.1f allocations per small Produce, want at most %d", n, maxSmallProduceAllocs)
	}
}

// TestReusable_DecodeOwnsStrings decodes Produce and Fetch requests into a
// connection's kept objects (kmsg's aliasing decoder) and then overwrites
// the bytes they came from, as the frame pool does: the topic names, the
// transactional id, the rack and the cluster id are unchanged, and a
// second request naming the same topic takes the first one's string.
func TestReusable_DecodeOwnsStrings(t *testing.T) {
	var k reusable
	txn := "txn-1"
	decode := func(req kmsg.Request) kmsg.Request {
		t.Helper()
		body := req.AppendTo(nil)
		msg := k.request(req.Key())
		msg.SetVersion(req.GetVersion())
		if err := k.decode(msg, body); err != nil {
			t.Fatal(err)
		}
		for i := range body {
			body[i] = 'X'
		}
		return msg
	}

	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.TransactionID = 9, &txn
	for _, name := range []string{"orders", "payments"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		rt.Partitions = append(rt.Partitions, kmsg.NewProduceRequestTopicPartition())
		produce.Topics = append(produce.Topics, rt)
	}
	p1 := decode(produce).(*kmsg.ProduceRequest)
	if got := []string{*p1.TransactionID, p1.Topics[0].Topic, p1.Topics[1].Topic}; got[0] != "txn-1" || got[1] != "orders" || got[2] != "payments" {
		t.Fatalf("after the frame was overwritten: %q", got)
	}
	first := unsafe.StringData(p1.Topics[0].Topic)
	p2 := decode(produce).(*kmsg.ProduceRequest)
	if p2.Topics[0].Topic != "orders" || unsafe.StringData(p2.Topics[0].Topic) != first {
		t.Fatalf("second Produce: topic %q not the first one's string", p2.Topics[0].Topic)
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.Rack = 12, "rack-a"
	cluster := "cluster-1"
	fetch.ClusterID = &cluster
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "payments"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	gone := kmsg.NewFetchRequestForgottenTopic()
	gone.Topic = "old"
	fetch.ForgottenTopics = append(fetch.ForgottenTopics, gone)
	f := decode(fetch).(*kmsg.FetchRequest)
	if f.Rack != "rack-a" || f.ClusterID == nil || *f.ClusterID != "cluster-1" || f.Topics[0].Topic != "payments" || f.ForgottenTopics[0].Topic != "old" {
		t.Fatalf("after the frame was overwritten: rack %q cluster %v topic %q forgotten %q", f.Rack, f.ClusterID, f.Topics[0].Topic, f.ForgottenTopics[0].Topic)
	}
}
