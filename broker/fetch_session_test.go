package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch is a Fetch v13 of topic's partitions (by id) at the given
// offsets in session id at epoch, forgetting forget, waiting at most
// maxWaitMs for a byte.
func sessionFetch(id [16]byte, session, epoch, maxWaitMs int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 13, maxWaitMs, 1, 1<<20
	req.SessionID, req.SessionEpoch = session, epoch
	if len(offsets) > 0 {
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = id
		for _, p := range slices.Sorted(mapKeys(offsets)) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offsets[p], 1<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		req.Topics = append(req.Topics, ft)
	}
	if len(forget) > 0 {
		req.ForgottenTopics = append(req.ForgottenTopics, kmsg.FetchRequestForgottenTopic{TopicID: id, Partitions: forget})
	}
	return req
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// answered lists a response's partitions as "partition:hw:1 with records, 0 without".
func answered(resp *kmsg.FetchResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			s := fmt.Sprintf("%d:%d:%d", p.Partition, p.HighWatermark, min(len(p.RecordBatches), 1))
			if p.ErrorCode != 0 {
				s += ":" + kerr.ErrorForCode(p.ErrorCode).Error()
			}
			out = append(out, s)
		}
	}
	return out
}

// A consumer's fetch session: the full request makes it and answers every
// partition; incremental ones answer only partitions with records or news,
// take new positions, forget partitions, and refuse a wrong epoch, an
// unknown session and a change of topic naming, as Kafka does.
func TestFetchSession_Incremental(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	tp, err := b.createTopic("sess", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte(tp.id)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t)
	produce := func(p int32, v string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "sess", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(1, "a")
	c := dialRaw(t, addr)
	corr := int32(0)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		corr++
		c.send(corr, req)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = req.Version
		c.recv(corr, resp)
		return resp
	}
	// Full, epoch 0: a session, every partition answered.
	resp := fetch(sessionFetch(id, 0, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("full fetch: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	sid := resp.SessionID
	if got := answered(resp); !slices.Equal(got, []string{"0:0:0", "1:1:1", "2:0:0"}) {
		t.Fatalf("full fetch answered %v", got)
	}
	if n, parts, _ := b.fetchSessions.Stats(); n != 1 || parts != 3 {
		t.Fatalf("cache holds %d sessions of %d partitions, want 1 of 3", n, parts)
	}
	// Epoch 1, partition 1 moved to offset 1: nothing new, nothing answered.
	resp = fetch(sessionFetch(id, sid, 1, 10, map[int32]int64{1: 1}))
	if resp.ErrorCode != 0 || resp.SessionID != sid || len(answered(resp)) != 0 {
		t.Fatalf("idle incremental fetch: error %d, session %d, answered %v", resp.ErrorCode, resp.SessionID, answered(resp))
	}
	// Records on 2 (from the session's position, 0) and 1 (from 1), in
	// the order the partitions changed.
	produce(2, "b")
	produce(1, "c")
	resp = fetch(sessionFetch(id, sid, 2, 0, nil))
	if got := answered(resp); !slices.Equal(got, []string{"2:1:1", "1:2:1"}) {
		t.Fatalf("incremental fetch after two appends answered %v", got)
	}
	// The same positions again: the records again, the high watermarks
	// already heard; a replayed epoch is refused.
	resp = fetch(sessionFetch(id, sid, 3, 0, nil))
	if got := answered(resp); !slices.Equal(got, []string{"2:1:1", "1:2:1"}) {
		t.Fatalf("incremental fetch at the same positions answered %v", got)
	}
	if resp = fetch(sessionFetch(id, sid, 3, 0, nil)); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || resp.SessionID != 0 {
		t.Fatalf("replayed epoch: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	// Forget 2, move 1 on: nothing to say; then 2 comes back, unheard.
	resp = fetch(sessionFetch(id, sid, 4, 0, map[int32]int64{1: 2}, 2))
	if got := answered(resp); len(got) != 0 {
		t.Fatalf("after forgetting 2 answered %v", got)
	}
	if _, parts, _ := b.fetchSessions.Stats(); parts != 2 {
		t.Fatalf("cache holds %d partitions after one was forgotten, want 2", parts)
	}
	resp = fetch(sessionFetch(id, sid, 5, 0, map[int32]int64{2: 1}))
	if got := answered(resp); !slices.Equal(got, []string{"2:1:0"}) {
		t.Fatalf("partition added back answered %v", got)
	}
	// Fetch v12 names topics by name: not this session's naming.
	v12 := sessionFetch(id, sid, 6, 0, nil)
	v12.Version = 12
	if resp = fetch(v12); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v12 in a v13 session: error %d", resp.ErrorCode)
	}
	// Epoch -1 closes it; an incremental fetch then finds none.
	if resp = fetch(sessionFetch(id, sid, -1, 0, map[int32]int64{0: 0})); resp.ErrorCode != 0 || resp.SessionID != 0 {
		t.Fatalf("closing fetch: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	if resp = fetch(sessionFetch(id, sid, 6, 0, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("fetch in a closed session: error %d", resp.ErrorCode)
	}
	if n, parts, _ := b.fetchSessions.Stats(); n != 0 || parts != 0 {
		t.Fatalf("cache holds %d sessions of %d partitions after the close", n, parts)
	}
}

// An incremental fetch with nothing to say waits for an append to any
// partition of the session, even one its request does not name, and
// answers only that one: the session watches every partition's log.
func TestFetchSession_LongPollOverTheSession(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	tp, err := b.createTopic("sesswait", 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte(tp.id)
	c := dialRaw(t, addr)
	c.send(1, sessionFetch(id, 0, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}))
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 13
	c.recv(1, resp)
	if resp.SessionID == 0 {
		t.Fatal("no session")
	}
	c.send(2, sessionFetch(id, resp.SessionID, 1, 30000, nil))
	parts := b.partitionsOf(tp)
	waitFor(t, 10e9, "the session watching partition 3", func() bool { return parts[3].log.Watchers() > 0 })
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Topic: "sesswait", Partition: 3, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp = kmsg.NewPtrFetchResponse()
	resp.Version = 13
	c.recv(2, resp)
	if got := answered(resp); !slices.Equal(got, []string{"3:1:1"}) {
		t.Fatalf("woken incremental fetch answered %v", got)
	}
	// Nothing changed since, nothing named: the request reads no
	// partition, waits its max wait out on the session, and keeps it.
	sid := resp.SessionID
	c.send(3, sessionFetch(id, sid, 2, 50, map[int32]int64{3: 1}))
	resp = kmsg.NewPtrFetchResponse()
	resp.Version = 13
	c.recv(3, resp)
	c.send(4, sessionFetch(id, sid, 3, 50, nil))
	resp = kmsg.NewPtrFetchResponse()
	resp.Version = 13
	c.recv(4, resp)
	if resp.ErrorCode != 0 || resp.SessionID != sid || len(answered(resp)) != 0 {
		t.Fatalf("idle incremental fetch: error %d, session %d (want %d), answered %v", resp.ErrorCode, resp.SessionID, sid, answered(resp))
	}
	if n, _, _ := b.fetchSessions.Stats(); n != 1 {
		t.Fatalf("%d sessions after the idle fetch, want 1", n)
	}
}

// With no room (max.incremental.fetch.session.cache.slots), a full fetch
// with epoch 0 gets no session and keeps working sessionless.
func TestFetchSession_NoRoom(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"max.incremental.fetch.session.cache.slots": "0"})
	tp, err := b.createTopic("noroom", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, addr)
	c.send(1, sessionFetch([16]byte(tp.id), 0, 0, 0, map[int32]int64{0: 0}))
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 13
	c.recv(1, resp)
	if resp.ErrorCode != 0 || resp.SessionID != 0 || len(answered(resp)) != 1 {
		t.Fatalf("full fetch without room: error %d, session %d, answered %v", resp.ErrorCode, resp.SessionID, answered(resp))
	}
}

// Followers replicate in one fetch session per leader: each broker holds
// a session of each other broker's follower with exactly the partitions it
// follows there, and the records and high watermarks of every partition
// reach every replica through the incremental fetches.
func TestCluster_FollowersFetchInSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, _ := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{"replica.fetch.wait.max.ms": "100"}
	})
	const topic, parts = "sessions", 30
	createReplicatedTopic(t, brokers[0], addrs[0], topic, parts)
	led := map[int]int{}
	for _, p := range topicPartitionsOf(brokers[0], topic) {
		led[int(p.Leader)-1]++
	}
	for i, b := range brokers {
		waitFor(t, 10*time.Second, fmt.Sprintf("broker %d: a session of each follower with the %d partitions it leads", i+1, led[i]), func() bool {
			n, ps, _ := b.fetchSessions.Stats()
			return n == 2 && ps == 2*led[i]
		})
	}
	prod := newClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t)
	const n = 5
	for i := range n {
		for p := range int32(parts) {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, b := range brokers {
		tp := b.lookupTopic(topic)
		for pi, p := range b.partitionsOf(tp) {
			waitFor(t, 10*time.Second, fmt.Sprintf("broker %d: partition %d replicated to %d with its high watermark", i+1, pi, n), func() bool {
				return p.log.LogEndOffset() == n && p.log.HighWatermark() == n
			})
		}
		if _, _, ev := b.fetchSessions.Stats(); ev != 0 {
			t.Fatalf("broker %d evicted %d sessions", i+1, ev)
		}
	}
}

// An idle session partition of a topic the consumer may no longer read is
// answered TOPIC_AUTHORIZATION_FAILED at the next incremental fetch, as
// Kafka authorizes every partition of a session on each request: an ACL
// change reaches the partitions no log change would have the session read.
func TestFetchSession_ACLChangeReachesIdlePartitions(t *testing.T) {
	dir := t.TempDir()
	b, addr := aclBroker(t, dir)
	admin := userClient(t, addr, "admin")
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "idle", 2, 1
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(testCtx(t), admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create idle: %v %+v", err, resp)
	}
	createACL(t, admin, acl.Topic, "idle", acl.Literal, "User:alice", acl.Read, acl.Allow)
	alice := userClient(t, addr, "alice")
	id := b.lookupTopic("idle").id
	fetch := func(session, epoch int32, offsets map[int32]int64) *kmsg.FetchResponse {
		t.Helper()
		resp, err := sessionFetch(id, session, epoch, 10, offsets).RequestWith(testCtx(t), alice)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("session %d epoch %d: %v", session, epoch, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	full := fetch(0, 0, map[int32]int64{0: 0, 1: 0})
	if full.SessionID == 0 {
		t.Fatal("no session made")
	}
	if got := answered(full); !slices.Equal(got, []string{"0:0:0", "1:0:0"}) {
		t.Fatalf("full fetch answered %v", got)
	}
	fetch(full.SessionID, 1, nil) // reads every partition, starts watching them
	if got := answered(fetch(full.SessionID, 2, nil)); len(got) != 0 {
		t.Fatalf("idle incremental fetch answered %v, want nothing", got)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("idle"), kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	if resp, err := del.RequestWith(testCtx(t), admin); err != nil || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("delete alice's ACL: %v %+v", err, resp)
	}
	want := []string{"0:-1:0:" + kerr.TopicAuthorizationFailed.Error(), "1:-1:0:" + kerr.TopicAuthorizationFailed.Error()}
	if got := answered(fetch(full.SessionID, 3, nil)); !slices.Equal(got, want) {
		t.Fatalf("incremental fetch after the ACL was deleted answered %v, want %v", got, want)
	}
}
