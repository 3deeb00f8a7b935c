package broker

// Per-connection reuse of what a small request allocates (issue #16).
//
// A Produce or Fetch that the reader handles and answers itself (the
// batch-1 round trip: nothing queued for the writer, the answer ready when
// the handler returns) leaves its pending, with the decoded request, the
// response and the encoded frame's buffer kept in pending.keep, as the
// connection's spare; the next Produce or Fetch on the connection takes it
// and decodes, answers and encodes into the same memory. The spare is
// reader-owned: only the reader takes it (dispatch) and sets it (after it
// has written the answer and run the release hook in deliver), so nothing
// can still refer to those objects when they are reused:
//   - the frame went back to the pool after the answer was written (deliver);
//   - the handler's wait, if any, has returned (p.done was closed before
//     the reader saw the request handled);
//   - the response was encoded in finish and written in deliver.
//
// A pending handed to the writer (requests pipelined behind another, a
// long poll) is never recycled: its objects go to the collector, as
// before.

import (
	"strings"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reusable holds the objects of one pending that the connection's next
// Produce or Fetch may reuse.
type reusable struct {
	produce     *kmsg.ProduceRequest
	produceResp *kmsg.ProduceResponse
	fetch       *kmsg.FetchRequest
	fetchResp   *kmsg.FetchResponse
	targets     []fetchTarget
	regions     [][]storage.Slice
	release     func()       // releases regions
	buf         []byte       // the encoded response frame
	out         protocol.Out // the response, when encoded by encode
	strs        ownedStrings // the kept requests' strings (decode)
}

// ownedStrings are the strings of the last Produce or Fetch decoded into a
// reusable's request, owned (not aliasing any frame), so that the next
// request naming the same topics takes them instead of copying its own.
type ownedStrings struct {
	topics  []string
	txnID   *string // Produce
	rack    string  // Fetch
	cluster *string // Fetch
}

// own returns s as a string that aliases no frame: *kept when equal (kept
// is then unchanged), else a copy, which becomes *kept.
func own(s string, kept *string) string {
	if *kept != s {
		*kept = strings.Clone(s)
	}
	return *kept
}

// ownPtr is own for a nullable string.
func ownPtr(s *string, kept **string) *string {
	if s == nil {
		return nil
	}
	if *kept == nil || **kept != *s {
		c := strings.Clone(*s)
		*kept = &c
	}
	return *kept
}

// decode decodes body into msg. A kept Produce or Fetch is decoded with
// kmsg's UnsafeReadFrom, whose strings alias the frame (which goes back to
// the pool after the handler), and its strings are replaced at once by
// owned ones, the last request's when they are equal: a client producing
// to or fetching from the same topics, the steady state, copies no topic
// name. Nothing else sees the request before that. Record bytes alias the
// frame with either decoder, as before. k may be nil.
func (k *reusable) decode(msg kmsg.Request, body []byte) error {
	switch m := msg.(type) {
	case *kmsg.ProduceRequest:
		if k == nil || m != k.produce {
			break
		}
		if err := m.UnsafeReadFrom(body); err != nil {
			return err
		}
		m.TransactionID = ownPtr(m.TransactionID, &k.strs.txnID)
		k.strs.topics = grow(k.strs.topics, max(len(k.strs.topics), len(m.Topics)))
		for i := range m.Topics {
			m.Topics[i].Topic = own(m.Topics[i].Topic, &k.strs.topics[i])
		}
		return nil
	case *kmsg.FetchRequest:
		if k == nil || m != k.fetch {
			break
		}
		if err := m.UnsafeReadFrom(body); err != nil {
			return err
		}
		m.Rack = own(m.Rack, &k.strs.rack)
		m.ClusterID = ownPtr(m.ClusterID, &k.strs.cluster)
		k.strs.topics = grow(k.strs.topics, max(len(k.strs.topics), len(m.Topics)))
		for i := range m.Topics {
			m.Topics[i].Topic = own(m.Topics[i].Topic, &k.strs.topics[i])
		}
		for i := range m.ForgottenTopics {
			m.ForgottenTopics[i].Topic = strings.Clone(m.ForgottenTopics[i].Topic)
		}
		return nil
	}
	return msg.ReadFrom(body)
}

// maxKeptFrame bounds the encoded-response buffer a connection keeps.
const maxKeptFrame = 64 << 10

// reusableKey reports whether requests of key recycle their pending: only
// those whose handlers are known to keep nothing of the request or the
// response once answered.
func reusableKey(key int16) bool {
	return key == int16(kmsg.Produce) || key == int16(kmsg.Fetch)
}

// takeSpare returns the pending for the request in frame: the connection's
// spare when the request can reuse it, else a new one. Reader only.
func (c *conn) takeSpare(frame []byte) *pending {
	if p := c.spare; p != nil {
		if key, _, _, err := protocol.ParseRequestHeaderPrefix(frame); err == nil && reusableKey(key) {
			c.spare = nil
			return p
		}
	}
	return &pending{}
}

// recycle makes p, which the reader has just delivered, the connection's
// spare when its request allows it. Reader only.
func (c *conn) recycle(p *pending) {
	if !p.recycle || cap(p.keep.buf) > maxKeptFrame {
		return // a large answer's buffer is not kept for every later one
	}
	*p = pending{keep: p.keep} // p.keep.out points into itself: reset in place
	c.spare = p
}

// request returns the request struct to decode a request of key into:
// a kept one for Produce and Fetch (new the first time), a new one
// otherwise. k may be nil.
func (k *reusable) request(key int16) kmsg.Request {
	if k == nil {
		return requestForKey(key)
	}
	switch kmsg.Key(key) {
	case kmsg.Produce:
		if k.produce == nil {
			k.produce = kmsg.NewPtrProduceRequest()
		} else {
			// Everything back to its zero value but the slices' capacity,
			// which the decoder appends into.
			*k.produce = kmsg.ProduceRequest{Topics: k.produce.Topics[:0]}
		}
		return k.produce
	case kmsg.Fetch:
		if k.fetch == nil {
			k.fetch = kmsg.NewPtrFetchRequest()
		} else {
			// Everything back to its zero value but the lists' capacity,
			// which kmsg's decoder appends into.
			f := k.fetch
			*f = kmsg.FetchRequest{Topics: f.Topics[:0], ForgottenTopics: f.ForgottenTopics[:0]}
		}
		return k.fetch
	}
	return requestForKey(key)
}

// requestForKey is a new request of key: Kafka's, or one of Gregor's own.
func requestForKey(key int16) kmsg.Request {
	if req := kmsg.RequestForKey(key); req != nil {
		return req
	}
	return protocol.GregorRequestForKey(key)
}

// produceResponse returns the response to a Produce: r's kept one, emptied
// (its lists keep their capacity; see produceResponsePartitions), or a
// new one.
func (r *request) produceResponse(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	k := r.keep
	if k == nil {
		return req.ResponseKind().(*kmsg.ProduceResponse)
	}
	if k.produceResp == nil {
		k.produceResp = req.ResponseKind().(*kmsg.ProduceResponse)
		return k.produceResp
	}
	*k.produceResp = kmsg.ProduceResponse{Version: req.Version, Topics: k.produceResp.Topics[:0]}
	k.produceResp.Default()
	return k.produceResp
}

// produceResponsePartitions is an empty partition list for the ti'th topic
// of resp, with the capacity a previous response left in that slot.
func produceResponsePartitions(resp *kmsg.ProduceResponse, ti int) []kmsg.ProduceResponseTopicPartition {
	if ti < cap(resp.Topics) {
		return resp.Topics[:ti+1][ti].Partitions[:0]
	}
	return nil
}

// encode encodes resp into k's Out and buffer.
func (k *reusable) encode(correlationID int32, resp kmsg.Response) *protocol.Out {
	k.buf = protocol.EncodeResponseInto(&k.out, k.buf, correlationID, resp)
	return &k.out
}

// fetchResponse is produceResponse for a Fetch.
func (r *request) fetchResponse(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	k := r.keep
	if k == nil {
		return req.ResponseKind().(*kmsg.FetchResponse)
	}
	if k.fetchResp == nil {
		k.fetchResp = req.ResponseKind().(*kmsg.FetchResponse)
		return k.fetchResp
	}
	*k.fetchResp = kmsg.FetchResponse{Version: req.Version, Topics: k.fetchResp.Topics[:0]}
	k.fetchResp.Default()
	return k.fetchResp
}

// fetchResponsePartitions is produceResponsePartitions for a Fetch.
func fetchResponsePartitions(resp *kmsg.FetchResponse, ti int) []kmsg.FetchResponseTopicPartition {
	if ti < cap(resp.Topics) {
		return resp.Topics[:ti+1][ti].Partitions[:0]
	}
	return nil
}

// fetchRegions returns the (empty) file regions of resp's partitions, one
// list per topic, in k's memory when k is not nil.
func (k *reusable) fetchRegions(resp *kmsg.FetchResponse) [][]storage.Slice {
	var regions [][]storage.Slice
	if k != nil {
		regions = k.regions
	}
	regions = grow(regions, len(resp.Topics))
	for ti := range regions {
		regions[ti] = grow(regions[ti], len(resp.Topics[ti].Partitions))
		clear(regions[ti]) // released with the previous answer
	}
	if k != nil {
		k.regions = regions
	}
	return regions
}

// releaser returns the release hook of a Fetch answer that holds regions
// (which, with k, are k's).
func (k *reusable) releaser(regions [][]storage.Slice) func() {
	if k == nil {
		return func() { releaseRegions(regions) }
	}
	if k.release == nil {
		k.release = func() { releaseRegions(k.regions) }
	}
	return k.release
}

// encodeFetch encodes a Fetch answer into r's kept Out when it has one.
func (r *request) encodeFetch(resp *kmsg.FetchResponse, records func(t, p int) (protocol.Region, bool)) *protocol.Out {
	if r.keep == nil {
		return protocol.EncodeFetchResponse(r.hdr.CorrelationID, resp, records)
	}
	protocol.EncodeFetchResponseInto(&r.keep.out, r.hdr.CorrelationID, resp, records)
	return &r.keep.out
}

// grow returns s with length n, reusing its capacity.
func grow[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}
