package broker

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerMutationQuota_StrictAndPermissive sets
// controller_mutation_rate=2 for the raw connections' client-id ("test")
// and drives the quota's clock by hand: the bucket holds 11 × 2 = 22
// tokens. Each request goes on a fresh connection (a throttled answer
// mutes its connection).
func TestControllerMutationQuota_StrictAndPermissive(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	b.quotas.SetClock(func() time.Time { return time.UnixMilli(clock.Load()) })
	advance := func(ms int64) { clock.Add(ms) }
	admin := newClient(t, addr)
	if got := alterQuotas(t, admin, false, quotaEntry(quotaEnt("client-id=test"), "controller_mutation_rate=2")); fmt.Sprint(got) != "[OK]" {
		t.Fatalf("alter: %q", got)
	}
	corr := int32(0)
	do := func(req kmsg.Request, resp kmsg.Response) {
		t.Helper()
		c := dialRaw(t, addr)
		defer c.nc.Close()
		corr++
		c.send(corr, req)
		resp.SetVersion(req.GetVersion())
		c.recv(corr, resp)
	}
	create := func(version int16, parts ...int32) ([]int16, int32) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 5000
		for _, p := range parts {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("mq-%d", corr*10+int32(len(req.Topics))), p, 1
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		do(req, resp)
		var codes []int16
		for _, st := range resp.Topics {
			codes = append(codes, st.ErrorCode)
			if st.ErrorCode == kerr.ThrottlingQuotaExceeded.Code && (st.ErrorMessage == nil || *st.ErrorMessage != "The throttling quota has been exceeded.") {
				t.Fatalf("message %v", st.ErrorMessage)
			}
		}
		return codes, resp.ThrottleMillis
	}
	const ok, thr = int16(0), int16(89)
	check := func(what string, codes []int16, throttle int32, wantCodes []int16, wantThrottle int32) {
		t.Helper()
		if fmt.Sprint(codes) != fmt.Sprint(wantCodes) || throttle != wantThrottle {
			t.Fatalf("%s: codes %v throttle %d, want %v and %d", what, codes, throttle, wantCodes, wantThrottle)
		}
	}
	// Strict (v6+): accepted while the bucket is not below zero, whatever
	// the size, and not throttled.
	codes, th := create(7, 20)
	check("20 of 22 tokens", codes, th, []int16{ok}, 0) // 2 left
	codes, th = create(7, 5)
	check("5 more", codes, th, []int16{ok}, 0) // -3
	codes, th = create(7, 1, 1)
	check("below zero", codes, th, []int16{thr, thr}, 1500) // 3 tokens at 2/s
	advance(1000)                                           // -1
	codes, th = create(6, 1)
	check("a second later", codes, th, []int16{thr}, 500)
	advance(500) // 0: not below zero
	codes, th = create(7, 1, 1)
	check("refilled to zero", codes, th, []int16{ok, thr}, 500) // the first takes it to -1
	// validate_only uses the quota too (KRaft).
	advance(500) // 0
	vreq := kmsg.NewPtrCreateTopicsRequest()
	vreq.SetVersion(7)
	vreq.ValidateOnly = true
	vt := kmsg.NewCreateTopicsRequestTopic()
	vt.Topic, vt.NumPartitions, vt.ReplicationFactor = "mq-validate", 4, 1
	vreq.Topics = append(vreq.Topics, vt)
	vresp := kmsg.NewPtrCreateTopicsResponse()
	do(vreq, vresp)
	if vresp.Topics[0].ErrorCode != 0 || vresp.ThrottleMillis != 0 {
		t.Fatalf("validate_only: %+v", vresp)
	}
	if b.lookupTopic("mq-validate") != nil {
		t.Fatal("validate_only created the topic")
	}
	// Now -4. Permissive (v5): done, and throttled for what it took below zero.
	codes, th = create(5, 2)
	check("permissive", codes, th, []int16{ok}, 3000) // -6

	// DeleteTopics: strict from v5 on. "mq-0" has 20 partitions.
	del := func(version int16, name string) (int16, int32) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 5000
		req.TopicNames = []string{name}
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(name)
		req.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
		resp := kmsg.NewPtrDeleteTopicsResponse()
		do(req, resp)
		return resp.Topics[0].ErrorCode, resp.ThrottleMillis
	}
	if code, th := del(6, "mq-0"); code != thr || th != 3000 {
		t.Fatalf("strict delete: code %d throttle %d", code, th)
	}
	if b.lookupTopic("mq-0") == nil {
		t.Fatal("a refused delete deleted the topic")
	}
	if code, th := del(4, "mq-0"); code != ok || th != 13000 { // -26
		t.Fatalf("permissive delete: code %d throttle %d", code, th)
	}
	if b.lookupTopic("mq-0") != nil {
		t.Fatal("the permissive delete left the topic")
	}
	// CreatePartitions: strict from v3 on.
	grow := func(version int16, name string, count int32) (int16, int32) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrCreatePartitionsResponse()
		do(req, resp)
		return resp.Topics[0].ErrorCode, resp.ThrottleMillis
	}
	// "mq-10" has 5 partitions.
	if code, th := grow(3, "mq-10", 11); code != thr || th != 13000 {
		t.Fatalf("strict create partitions: code %d throttle %d", code, th)
	}
	if code, th := grow(2, "mq-10", 11); code != ok || th != 16000 { // 6 more: -32
		t.Fatalf("permissive create partitions: code %d throttle %d", code, th)
	}
	if n := len(b.partitionsOf(b.lookupTopic("mq-10"))); n != 11 {
		t.Fatalf("mq-10 has %d partitions", n)
	}
	// Another client-id has no quota.
	resp, err := kmsg.NewPtrCreateTopicsRequest().RequestWith(testCtx(t), admin)
	if err != nil || resp.ThrottleMillis != 0 {
		t.Fatalf("another client: %v %v", resp, err)
	}
	// 32 s later the bucket is back at zero: accepted again.
	advance(16000)
	codes, th = create(7, 1)
	check("refilled", codes, th, []int16{ok}, 0)
	if ms, _, _ := quotaMetrics(t, b, "controller_mutation", "", "test"); ms != 1500+500+500+3000+3000+13000+13000+16000 {
		t.Fatalf("controller_mutation throttle histogram sums %vms", ms)
	}
}
