package fetchsession

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestNextEpoch(t *testing.T) {
	for _, c := range [][2]int32{{0, 1}, {1, 2}, {math.MaxInt32, 1}, {FinalEpoch, FinalEpoch}} {
		if got := NextEpoch(c[0]); got != c[1] {
			t.Errorf("NextEpoch(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

// full is a full Fetch v13 of n partitions of one topic, and its answer.
func full(n int) (*kmsg.FetchRequest, *kmsg.FetchResponse) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionEpoch = 13, InitialEpoch
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = [16]byte{1}
	st := kmsg.NewFetchResponseTopic()
	for i := range n {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = int32(i)
		rt.Partitions = append(rt.Partitions, rp)
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = int32(i)
		st.Partitions = append(st.Partitions, sp)
	}
	req.Topics = append(req.Topics, rt)
	resp.Topics = append(resp.Topics, st)
	return req, resp
}

// A full cache makes room as Kafka's does: a session unused for
// EvictAfter goes first; otherwise only a newcomer worth more (a
// follower's over a consumer's, then more partitions) evicts the least.
func TestCache_Eviction(t *testing.T) {
	c := NewCache(2, nil)
	now := time.Unix(1000, 0)
	small, smallResp := full(2)
	big, bigResp := full(5)
	a := c.Create(small, smallResp, false, now)
	b := c.Create(big, bigResp, false, now)
	if a == nil || b == nil || a.ID() == b.ID() || a.ID() <= 0 || b.ID() <= 0 {
		t.Fatalf("sessions %v %v", a, b)
	}
	// A consumer's session of 2 is worth no more than either: not made.
	if s := c.Create(small, smallResp, false, now); s != nil {
		t.Fatalf("a session worth less than every other was made: %d", s.ID())
	}
	// Of 5, consumer: evicts the smaller one.
	d := c.Create(big, bigResp, false, now)
	if d == nil {
		t.Fatal("a larger session did not evict the smaller")
	}
	if n, parts, ev := c.Stats(); n != 2 || parts != 10 || ev != 1 {
		t.Fatalf("stats %d sessions, %d partitions, %d evictions; want 2, 10, 1", n, parts, ev)
	}
	// A follower's session of 2 outranks consumers' of 5.
	f := c.Create(small, smallResp, true, now)
	if f == nil {
		t.Fatal("a follower's session did not evict a consumer's")
	}
	// Two followers now or one follower and a consumer: a consumer's
	// session of 5 cannot evict the follower's, but evicts one unused for
	// EvictAfter, whoever's it is.
	later := now.Add(EvictAfter + time.Second)
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = 13, f.ID(), 1
	if _, _, code := c.Incremental(c.Lookup(f.ID()), req, req, nil, later); code != 0 {
		t.Fatalf("incremental: %d", code)
	}
	if s := c.Create(big, bigResp, false, later); s == nil {
		t.Fatal("a stale session was not evicted")
	}
	req.SessionEpoch = 2
	if _, _, code := c.Incremental(c.Lookup(f.ID()), req, req, nil, later); code != 0 {
		t.Fatalf("the follower's session, used recently, was evicted: %d", code)
	}
}

// incremental is an incremental request of session s naming offsets (of
// topic 1's partitions) and forgetting forget.
func incremental(s *Session, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = 13, s.ID(), s.epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = [16]byte{1}
		for p, o := range offsets {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{TopicID: [16]byte{1}, Partitions: forget}}
	}
	return req
}

// listed is the partitions an incremental request is to read.
func listed(t *testing.T, c *Cache, s *Session, req *kmsg.FetchRequest) []int32 {
	t.Helper()
	parts, closed, code := c.Incremental(s, req, req, nil, time.Unix(2000, 0))
	if code != 0 || closed {
		t.Fatalf("incremental: error %d, closed %v", code, closed)
	}
	var out []int32
	for _, p := range parts {
		out = append(out, p.Partition)
	}
	var inReq []int32
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			inReq = append(inReq, rp.Partition)
		}
	}
	if !slices.Equal(out, inReq) {
		t.Fatalf("the rewritten request lists %v, the partitions returned are %v", inReq, out)
	}
	return out
}

// An incremental request reads only what changed: every partition once
// after the session is made (to start watching them), then only those
// whose log changed (LogChanged, first, in the order they changed) and
// those the request names; a partition answered with an error or records
// stays to be read again. Forgotten partitions and closed sessions leave,
// with what they watched handed to the retire hook, and their LastFetch
// stops at the time they left.
func TestSession_ReadsOnlyWhatChanged(t *testing.T) {
	retired := map[int32]any{}
	c := NewCache(4, func(p *Partition, w any) { retired[p.Partition] = w })
	req, resp := full(1000)
	s := c.Create(req, resp, true, time.Unix(1000, 0))
	if got := listed(t, c, s, incremental(s, nil)); len(got) != 1000 {
		t.Fatalf("first incremental request lists %d partitions, want all 1000", len(got))
	}
	for _, p := range s.parts {
		if _, ok := p.Watch("log-" + fmt.Sprint(p.Partition)); !ok {
			t.Fatal("Watch refused in a live session")
		}
	}
	s.Fetched(time.Unix(2000, 0))
	if got := listed(t, c, s, incremental(s, nil)); len(got) != 0 {
		t.Fatalf("idle request lists %v", got)
	}
	s.index[Key{TopicID: [16]byte{1}, Partition: 700}].LogChanged()
	s.index[Key{TopicID: [16]byte{1}, Partition: 5}].LogChanged()
	s.index[Key{TopicID: [16]byte{1}, Partition: 700}].LogChanged()
	select {
	case <-s.Wake():
	default:
		t.Fatal("a change did not wake the session")
	}
	if got := listed(t, c, s, incremental(s, map[int32]int64{9: 3, 5: 1})); !slices.Equal(got, []int32{700, 9, 5}) && !slices.Equal(got, []int32{700, 5, 9}) {
		t.Fatalf("request after changes of 700 and 5, naming 9 and 5, lists %v; want 700 then the named ones", got)
	}
	// 700 answered with an error: read again by the next request.
	parts := []*Partition{s.index[Key{TopicID: [16]byte{1}, Partition: 700}]}
	r := kmsg.NewPtrFetchResponse()
	r.Topics = []kmsg.FetchResponseTopic{{TopicID: [16]byte{1}, Partitions: []kmsg.FetchResponseTopicPartition{{Partition: 700, ErrorCode: 6}}}}
	s.Answer(parts, r, func(int) (bool, bool) { return false, false }, func(int, int) {})
	if got := listed(t, c, s, incremental(s, nil)); !slices.Equal(got, []int32{700}) {
		t.Fatalf("after an error answer the next request lists %v, want [700]", got)
	}
	// Forget 3: it leaves, its watch is handed back, LogChanged no longer
	// lists it.
	p3 := s.index[Key{TopicID: [16]byte{1}, Partition: 3}]
	listed(t, c, s, incremental(s, nil, 3))
	if retired[3] != "log-3" || !p3.LastFetch().Equal(time.Unix(2000, 0)) {
		t.Fatalf("forgotten partition: retired %v, last fetch %v", retired[3], p3.LastFetch())
	}
	p3.LogChanged()
	if got := listed(t, c, s, incremental(s, nil)); len(got) != 0 {
		t.Fatalf("a forgotten partition's change listed %v", got)
	}
	if _, ok := p3.Watch("again"); ok {
		t.Fatal("Watch accepted for a partition out of its session")
	}
	// Closing the session retires every partition.
	s.Fetched(time.Unix(3000, 0))
	c.Remove(s.ID())
	if len(retired) != 1000 {
		t.Fatalf("%d partitions retired after the close, want 1000", len(retired))
	}
	if p := s.index[Key{TopicID: [16]byte{1}, Partition: 1}]; p.left.Load() == 0 {
		t.Fatal("a partition of a closed session has not left it")
	}
}
