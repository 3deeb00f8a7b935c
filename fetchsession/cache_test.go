package fetchsession

import (
	"math"
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
	c := NewCache(2)
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
	if _, code := c.Incremental(c.Lookup(f.ID()), req, req, nil, later); code != 0 {
		t.Fatalf("incremental: %d", code)
	}
	if s := c.Create(big, bigResp, false, later); s == nil {
		t.Fatal("a stale session was not evicted")
	}
	req.SessionEpoch = 2
	if _, code := c.Incremental(c.Lookup(f.ID()), req, req, nil, later); code != 0 {
		t.Fatalf("the follower's session, used recently, was evicted: %d", code)
	}
}
