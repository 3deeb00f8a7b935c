package broker

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaEnt builds request entity components from "type=name" pairs;
// "type" alone is the type's default entity.
func quotaEnt(pairs ...string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for _, p := range pairs {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		t, n, ok := strings.Cut(p, "=")
		e.Type = t
		if ok {
			e.Name = kmsg.StringPtr(n)
		}
		out = append(out, e)
	}
	return out
}

// quotaOps builds ops from "key=value" (set) and "-key" (remove).
func quotaOps(ops ...string) []kmsg.AlterClientQuotasRequestEntryOp {
	var out []kmsg.AlterClientQuotasRequestEntryOp
	for _, s := range ops {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		if k, ok := strings.CutPrefix(s, "-"); ok {
			op.Key, op.Remove = k, true
		} else {
			k, v, _ := strings.Cut(s, "=")
			op.Key = k
			fmt.Sscan(v, &op.Value)
		}
		out = append(out, op)
	}
	return out
}

func alterQuotas(t *testing.T, cl *kgo.Client, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []string {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.Entries {
		s := "OK"
		if e.ErrorCode != 0 {
			s = kerr.ErrorForCode(e.ErrorCode).(*kerr.Error).Message + ": " + *e.ErrorMessage
		}
		out = append(out, s)
	}
	return out
}

func quotaEntry(ent []kmsg.AlterClientQuotasRequestEntryEntity, ops ...string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity, e.Ops = ent, quotaOps(ops...)
	return e
}

// describeQuotas runs a filter of "type=name" (exact), "type" (default)
// and "type*" (any) components and renders the answer one line an entity,
// "user=alice,client-id=<default> producer_byte_rate=1024", sorted.
func describeQuotas(t *testing.T, cl *kgo.Client, strict bool, comps ...string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict = strict
	for _, c := range comps {
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		switch typ, name, ok := strings.Cut(c, "="); {
		case ok:
			comp.EntityType, comp.MatchType, comp.Match = typ, kmsg.QuotasMatchTypeExact, kmsg.StringPtr(name)
		case strings.HasSuffix(c, "*"):
			comp.EntityType, comp.MatchType = strings.TrimSuffix(c, "*"), kmsg.QuotasMatchTypeAny
		default:
			comp.EntityType, comp.MatchType = c, kmsg.QuotasMatchTypeDefault
		}
		req.Components = append(req.Components, comp)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message + ": " + *resp.ErrorMessage
	}
	var lines []string
	for _, e := range resp.Entries {
		var ents, vals []string
		for _, x := range e.Entity {
			n := "<default>"
			if x.Name != nil {
				n = *x.Name
			}
			ents = append(ents, x.Type+"="+n)
		}
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		lines = append(lines, strings.Join(ents, ",")+" "+strings.Join(vals, ","))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestClientQuotas_AlterErrors(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	const bad = "INVALID_REQUEST: "
	for _, tc := range []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		want  string
	}{
		{"user", quotaEntry(quotaEnt("user=alice"), "producer_byte_rate=1024"), "OK"},
		{"user default client", quotaEntry(quotaEnt("user", "client-id=c1"), "request_percentage=50.5"), "OK"},
		{"ip", quotaEntry(quotaEnt("ip=127.0.0.1"), "connection_creation_rate=10"), "OK"},
		{"ip default", quotaEntry(quotaEnt("ip"), "connection_creation_rate=100"), "OK"},
		{"remove unknown key", quotaEntry(quotaEnt("user=bob"), "-nonsense"), "OK"},
		{"empty entity", quotaEntry(nil, "producer_byte_rate=1"), bad + "Invalid empty client quota entity"},
		{"unknown type", quotaEntry(quotaEnt("group=g"), "producer_byte_rate=1"), bad + "Unhandled client quota entity type: group"},
		{"repeated type", quotaEntry(quotaEnt("user=a", "user=b"), "producer_byte_rate=1"), bad + "Invalid empty client quota entity, duplicate entity entry user"},
		{"empty name", quotaEntry(quotaEnt("client-id="), "producer_byte_rate=1"), bad + "Empty client-id not supported"},
		{"ip with user", quotaEntry(quotaEnt("ip=10.0.0.1", "user=a"), "connection_creation_rate=1"), bad + "Invalid quota entity combination, IP entity should not be combined with User or ClientId"},
		{"not an ip", quotaEntry(quotaEnt("ip=nope"), "connection_creation_rate=1"), bad + "nope is not a valid IP or resolvable host."},
		{"unknown key", quotaEntry(quotaEnt("user=a"), "bogus_rate=1"), bad + "Invalid configuration key bogus_rate"},
		{"ip key on user", quotaEntry(quotaEnt("user=a"), "connection_creation_rate=1"), bad + "Invalid configuration key connection_creation_rate"},
		{"user key on ip", quotaEntry(quotaEnt("ip=10.0.0.1"), "producer_byte_rate=1"), bad + "Invalid configuration key producer_byte_rate"},
		{"zero", quotaEntry(quotaEnt("user=a"), "consumer_byte_rate=0"), bad + "Quota consumer_byte_rate must be greater than 0"},
		{"negative", quotaEntry(quotaEnt("user=a"), "request_percentage=-1"), bad + "Quota request_percentage must be greater than 0"},
		{"fractional long", quotaEntry(quotaEnt("user=a"), "producer_byte_rate=1.5"), bad + "producer_byte_rate cannot be a fractional value."},
		{"int too large", quotaEntry(quotaEnt("ip"), "connection_creation_rate=3e9"), bad + "Proposed value for connection_creation_rate is too large for an INT."},
		{"repeated key", quotaEntry(quotaEnt("user=a"), "producer_byte_rate=1", "producer_byte_rate=2"), bad + "Duplicate quota key producer_byte_rate not updating quota for this entity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := alterQuotas(t, cl, false, tc.entry)
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Only the valid entries were stored (bob's no-op removal stores
	// nothing), each as sent.
	want := strings.Join([]string{
		"ip=127.0.0.1 connection_creation_rate=10",
		"ip=<default> connection_creation_rate=100",
		"user=<default>,client-id=c1 request_percentage=50.5",
		"user=alice producer_byte_rate=1024",
	}, "\n")
	if got := describeQuotas(t, cl, false); got != want {
		t.Fatalf("stored:\n%s\nwant:\n%s", got, want)
	}
}

func TestClientQuotas_DescribeFiltersAndPersistence(t *testing.T) {
	dir := t.TempDir()
	b, addr := startBroker(t, dir, nil)
	cl := newClient(t, addr)
	got := alterQuotas(t, cl, false,
		quotaEntry(quotaEnt("user=alice"), "producer_byte_rate=1024", "consumer_byte_rate=2048"),
		quotaEntry(quotaEnt("user=alice", "client-id=app"), "request_percentage=25"),
		quotaEntry(quotaEnt("user=alice", "client-id"), "producer_byte_rate=512"),
		quotaEntry(quotaEnt("user"), "controller_mutation_rate=2.5"),
		quotaEntry(quotaEnt("client-id=app"), "consumer_byte_rate=4096"),
		quotaEntry(quotaEnt("client-id"), "producer_byte_rate=100"),
		quotaEntry(quotaEnt("ip=::1"), "connection_creation_rate=5"),
		quotaEntry(quotaEnt("user=alice"), "producer_byte_rate=1"), // the same entity again
	)
	want := []string{"OK", "OK", "OK", "OK", "OK", "OK", "OK", "INVALID_REQUEST: Ignoring duplicate entity users/alice"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("alter: %q", got)
	}
	// validate_only stores nothing.
	if got := alterQuotas(t, cl, true, quotaEntry(quotaEnt("user=carol"), "producer_byte_rate=7")); fmt.Sprint(got) != "[OK]" {
		t.Fatalf("validate_only: %q", got)
	}
	const (
		alice      = "user=alice consumer_byte_rate=2048,producer_byte_rate=1024"
		aliceApp   = "user=alice,client-id=app request_percentage=25"
		aliceDef   = "user=alice,client-id=<default> producer_byte_rate=512"
		userDef    = "user=<default> controller_mutation_rate=2.5"
		clientApp  = "client-id=app consumer_byte_rate=4096"
		clientDef  = "client-id=<default> producer_byte_rate=100"
		ipv6       = "ip=::1 connection_creation_rate=5"
		invalidReq = "INVALID_REQUEST: "
	)
	lines := func(ls ...string) string { sort.Strings(ls); return strings.Join(ls, "\n") }
	for _, tc := range []struct {
		strict bool
		comps  []string
		want   string
	}{
		{false, nil, lines(alice, aliceApp, aliceDef, userDef, clientApp, clientDef, ipv6)},
		{true, nil, ""},
		{false, []string{"user=alice"}, lines(alice, aliceApp, aliceDef)},
		{true, []string{"user=alice"}, alice},
		{false, []string{"user"}, userDef},
		{false, []string{"user*"}, lines(alice, aliceApp, aliceDef, userDef)},
		{true, []string{"user*"}, lines(alice, userDef)},
		{false, []string{"client-id=app"}, lines(aliceApp, clientApp)},
		{true, []string{"client-id"}, clientDef},
		{false, []string{"user=alice", "client-id*"}, lines(aliceApp, aliceDef)},
		{false, []string{"user=alice", "client-id"}, aliceDef},
		{false, []string{"user=nobody"}, ""},
		{false, []string{"ip*"}, ipv6},
		{false, []string{"ip*", "user*"}, invalidReq + "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
		{false, []string{"user=a", "user*"}, invalidReq + "Entity type user cannot appear more than once in the filter."},
		{false, []string{"group*"}, "UNSUPPORTED_VERSION: Unsupported entity type group"},
		{false, []string{"*"}, invalidReq + "Invalid empty entity type."},
	} {
		if got := describeQuotas(t, cl, tc.strict, tc.comps...); got != tc.want {
			t.Errorf("describe strict=%v %q:\n%s\nwant:\n%s", tc.strict, tc.comps, got, tc.want)
		}
	}
	// An exact match with no name is a bad request.
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = "user", kmsg.QuotasMatchTypeExact
	req.Components = append(req.Components, c)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("exact without match: %v %v", resp, err)
	}

	// Removing every key removes the entity; a restart keeps the rest.
	if got := alterQuotas(t, cl, false, quotaEntry(quotaEnt("ip=::1"), "-connection_creation_rate")); fmt.Sprint(got) != "[OK]" {
		t.Fatalf("remove: %q", got)
	}
	cl.Close()
	b.Close()
	_, addr = startBroker(t, dir, nil)
	cl = newClient(t, addr)
	if got, want := describeQuotas(t, cl, false), lines(alice, aliceApp, aliceDef, userDef, clientApp, clientDef); got != want {
		t.Fatalf("after restart:\n%s\nwant:\n%s", got, want)
	}

	// kadm speaks the same API.
	adm := kadm.NewClient(cl)
	alts := []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("kadm")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 65536}},
	}}
	if res, err := adm.AlterClientQuotas(testCtx(t), alts); err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("kadm alter: %v %v", res, err)
	}
	desc, err := adm.DescribeClientQuotas(testCtx(t), true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: kmsg.StringPtr("kadm"), MatchType: kmsg.QuotasMatchTypeExact}})
	if err != nil || len(desc) != 1 || len(desc[0].Values) != 1 || desc[0].Values[0].Value != 65536 {
		t.Fatalf("kadm describe: %+v %v", desc, err)
	}
}

// throttleHook sums the throttle times brokers report to a client.
type throttleHook struct {
	mu    sync.Mutex
	total time.Duration
	n     int
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	h.total += d
	h.n++
	h.mu.Unlock()
}

func (h *throttleHook) sum() (time.Duration, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total, h.n
}

// quotaMetrics reads the broker's throttle histogram sum (ms) for a quota
// type and the rate and limit gauges of one shared rate.
func quotaMetrics(t *testing.T, b *Broker, typ, user, client string) (throttleMs, rate, limit float64) {
	t.Helper()
	mfs, err := b.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := labels(m)
			switch mf.GetName() {
			case "gregor_throttle_time_ms":
				if l["type"] == typ {
					throttleMs = m.GetHistogram().GetSampleSum()
				}
			case "gregor_quota_rate", "gregor_quota_limit":
				if l["type"] == typ && l["user"] == user && l["client_id"] == client {
					if mf.GetName() == "gregor_quota_rate" {
						rate = m.GetGauge().GetValue()
					} else {
						limit = m.GetGauge().GetValue()
					}
				}
			}
		}
	}
	return throttleMs, rate, limit
}

// TestClientQuotas_ThrottleProduceAndFetch runs franz-go clients against a
// client-id's producer_byte_rate and consumer_byte_rate of 100 KiB/s. The
// rate windows are shortened (quota.window.num 2 of 1 s) so that the burst a
// fresh rate allows is 100 KiB, not 1 MiB: moving 512 KiB must then be
// throttled by about (512-100)/100 s in all, as reported to the client in
// throttle_time_ms, and the broker's histogram must show the same sum. A
// client with another client-id is not throttled.
func TestClientQuotas_ThrottleProduceAndFetch(t *testing.T) {
	const (
		quota   = 100 << 10
		total   = 512 << 10
		recSize = 1 << 10
		burst   = quota * 1 // (quota.window.num - 1) × quota.window.size.seconds
	)
	b, addr := startBroker(t, "", map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"})
	admin := newClient(t, addr)
	got := alterQuotas(t, admin, false,
		quotaEntry(quotaEnt("client-id=slow-producer"), fmt.Sprintf("producer_byte_rate=%d", quota)),
		quotaEntry(quotaEnt("client-id=slow-consumer"), fmt.Sprintf("consumer_byte_rate=%d", quota)))
	if fmt.Sprint(got) != "[OK OK]" {
		t.Fatalf("alter: %q", got)
	}
	ctx := testCtx(t)
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, "quota-produce", "quota-fetch"); err != nil {
		t.Fatal(err)
	}
	minThrottle := time.Duration(float64(total-burst-32<<10) / quota * float64(time.Second))
	maxThrottle := time.Duration(float64(total)/quota*float64(time.Second)) + time.Second

	produce := func(clientID, topic string) *throttleHook {
		h := &throttleHook{}
		cl := newClient(t, addr, kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerLinger(0), kgo.WithHooks(h),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		val := make([]byte, recSize)
		for range total / recSize {
			cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		return h
	}
	slow := produce("slow-producer", "quota-produce")
	sum, n := slow.sum()
	t.Logf("producer: %d throttled answers, %v in all", n, sum)
	if sum < minThrottle || sum > maxThrottle {
		t.Fatalf("producer throttled %v in all, want %v to %v", sum, minThrottle, maxThrottle)
	}
	ms, rate, limit := quotaMetrics(t, b, "produce", "", "slow-producer")
	if time.Duration(ms)*time.Millisecond != sum {
		t.Fatalf("broker's produce throttle histogram sums %vms, client saw %v", ms, sum)
	}
	if limit != quota || rate <= 0 || rate > 2*quota {
		t.Fatalf("produce rate %v limit %v, want (0, %d] and %d", rate, limit, 2*quota, quota)
	}
	if fast, _ := produce("fast-producer", "quota-fetch").sum(); fast != 0 {
		t.Fatalf("a client-id without a quota was throttled %v", fast)
	}

	consume := func(clientID string) *throttleHook {
		h := &throttleHook{}
		cl := newClient(t, addr, kgo.ClientID(clientID), kgo.ConsumeTopics("quota-fetch"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(h))
		read := 0
		for read < total/recSize {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d records: %v", read, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
			read += fs.NumRecords()
		}
		cl.Close()
		return h
	}
	slowC := consume("slow-consumer")
	sum, n = slowC.sum()
	t.Logf("consumer: %d throttled answers, %v in all", n, sum)
	// A throttled Fetch is answered empty and its bytes unrecorded, and
	// with windows this short the retried fetch is often throttled again
	// before a sample expires: a consumer can see up to about twice the
	// producer's throttle for the same bytes.
	if maxC := 2 * maxThrottle; sum < minThrottle || sum > maxC {
		t.Fatalf("consumer throttled %v in all, want %v to %v", sum, minThrottle, maxC)
	}
	ms, rate, limit = quotaMetrics(t, b, "fetch", "", "slow-consumer")
	if time.Duration(ms)*time.Millisecond != sum {
		t.Fatalf("broker's fetch throttle histogram sums %vms, client saw %v", ms, sum)
	}
	if limit != quota || rate <= 0 || rate > 2*quota {
		t.Fatalf("fetch rate %v limit %v, want (0, %d] and %d", rate, limit, 2*quota, quota)
	}
	if fast, _ := consume("fast-consumer").sum(); fast != 0 {
		t.Fatalf("a consumer without a quota was throttled %v", fast)
	}
}

// TestClientQuotas_RequestPercentageMutes sets a request_percentage no
// request can stay under for the raw connection's client-id ("test"): each
// answer carries the throttle capped at one window (1 s), and the
// connection is muted meanwhile, so a request sent right behind the first
// is answered only after the throttle time (KIP-219).
func TestClientQuotas_RequestPercentageMutes(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	admin := newClient(t, addr)
	if got := alterQuotas(t, admin, false, quotaEntry(quotaEnt("client-id=test"), "request_percentage=0.000001")); fmt.Sprint(got) != "[OK]" {
		t.Fatalf("alter: %q", got)
	}
	// Another client-id is not throttled.
	m, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), admin)
	if err != nil || m.ThrottleMillis != 0 {
		t.Fatalf("unthrottled client: %v %v", m, err)
	}
	c := dialRaw(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	c.send(1, req)
	c.send(2, req)
	r1, r2 := kmsg.NewPtrMetadataResponse(), kmsg.NewPtrMetadataResponse()
	r1.SetVersion(12)
	r2.SetVersion(12)
	c.recv(1, r1)
	first := time.Now()
	c.recv(2, r2)
	gap := time.Since(first)
	if r1.ThrottleMillis != 1000 || r2.ThrottleMillis != 1000 {
		t.Fatalf("throttle %d and %d ms, want 1000 (one window)", r1.ThrottleMillis, r2.ThrottleMillis)
	}
	if gap < 900*time.Millisecond {
		t.Fatalf("the second answer came %v after the first: the connection was not muted", gap)
	}
	if ms, _, _ := quotaMetrics(t, b, "request", "", "test"); ms != 2000 {
		t.Fatalf("request throttle histogram sums %vms, want 2000", ms)
	}
}
