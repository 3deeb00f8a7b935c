package admin_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/admin"
	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/gregortest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quiet discards the servers' logs.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// console is an admin server over a test broker, and a client of it.
type console struct {
	b   *gregortest.Broker
	srv *admin.Server
	url string
	cl  *http.Client
}

func startConsole(t *testing.T, opts ...gregortest.Opt) *console {
	t.Helper()
	return startConsoleLog(t, quiet, opts...)
}

func startConsoleLog(t *testing.T, logger *slog.Logger, opts ...gregortest.Opt) *console {
	t.Helper()
	b := gregortest.Start(t, opts...)
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &console{b: b, srv: srv, url: hs.URL, cl: &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request as user (no credentials when user is ""; the password
// is user+"-pw").
func (c *console) do(t *testing.T, method, path, user string, form url.Values) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if user != "" {
		req.SetBasicAuth(user, user+"-pw")
	}
	resp, err := c.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var (
	csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	setRe  = regexp.MustCompile(`name="set" value="([^"]+)"`)
)

// csrf reads the CSRF token from a console page as user.
func (c *console) csrf(t *testing.T, user string) string {
	t.Helper()
	code, _, body := c.do(t, "GET", "/", user, nil)
	m := csrfRe.FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("GET /: %d, no csrf token:\n%s", code, body)
	}
	return m[1]
}

// post submits an action form with the user's CSRF token.
func (c *console) post(t *testing.T, path, user string, form url.Values) (int, string) {
	t.Helper()
	form.Set("csrf", c.csrf(t, user))
	code, _, body := c.do(t, "POST", path, user, form)
	return code, body
}

func committed(t *testing.T, cl *kgo.Client, group string) map[int32]int64 {
	t.Helper()
	resp, err := kadm.NewClient(cl).FetchOffsets(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
	return out
}

func sameOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestConsole_ResetOffsets previews and commits each reset strategy and
// checks the committed offsets exactly; the preview changes nothing, the
// confirm needs the CSRF token, and an active group is refused.
func TestConsole_ResetOffsets(t *testing.T) {
	c := startConsole(t, gregortest.Topic("orders", 2, nil))
	ctx := testCtx(t)
	cl := newClient(t, c.b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := range 10 {
			rs = append(rs, &kgo.Record{Topic: "orders", Partition: p, Value: []byte("v"), Timestamp: time.UnixMilli(int64(1_000_000 + 100*i))})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 3})
	os.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 5})
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp)
	}

	cases := []struct {
		query string
		want  map[int32]int64
	}{
		{"strategy=earliest", map[int32]int64{0: 0, 1: 0}},
		{"strategy=shift&value=4", map[int32]int64{0: 4, 1: 4}},
		{"strategy=shift&value=-10", map[int32]int64{0: 0, 1: 0}},
		{"strategy=latest&topic=orders", map[int32]int64{0: 10, 1: 10}},
		{"strategy=offset&value=7&topic=orders&partition=1", map[int32]int64{0: 10, 1: 7}},
		{"strategy=offset&value=99", map[int32]int64{0: 10, 1: 10}},
		{"strategy=timestamp&value=1000250", map[int32]int64{0: 3, 1: 3}},
		{"strategy=timestamp&value=" + url.QueryEscape(time.UnixMilli(1_000_500).UTC().Format(time.RFC3339Nano)), map[int32]int64{0: 5, 1: 5}},
		{"strategy=timestamp&value=2000000", map[int32]int64{0: 10, 1: 10}},
	}
	for _, tc := range cases {
		before := committed(t, cl, "g")
		code, _, body := c.do(t, "GET", "/groups/g/reset?"+tc.query, "", nil)
		if code != 200 {
			t.Fatalf("%s: preview %d:\n%s", tc.query, code, body)
		}
		if after := committed(t, cl, "g"); !sameOffsets(before, after) {
			t.Fatalf("%s: the dry run changed the offsets: %v -> %v", tc.query, before, after)
		}
		sets := setRe.FindAllStringSubmatch(body, -1)
		form := url.Values{}
		for _, m := range sets {
			form.Add("set", m[1])
		}
		// Without the token: refused, nothing changes.
		if code, _, _ := c.do(t, "POST", "/groups/g/reset", "", form); code != http.StatusForbidden {
			t.Fatalf("%s: confirm without csrf: %d, want 403", tc.query, code)
		}
		form.Set("csrf", "forged")
		if code, _, _ := c.do(t, "POST", "/groups/g/reset", "", form); code != http.StatusForbidden {
			t.Fatalf("%s: confirm with a forged csrf: %d, want 403", tc.query, code)
		}
		if after := committed(t, cl, "g"); !sameOffsets(before, after) {
			t.Fatalf("%s: a refused confirm changed the offsets", tc.query)
		}
		code, body2 := c.post(t, "/groups/g/reset", "", form)
		if code != 200 {
			t.Fatalf("%s: confirm %d:\n%s", tc.query, code, body2)
		}
		if got := committed(t, cl, "g"); !sameOffsets(got, tc.want) {
			t.Fatalf("%s: committed %v, want %v (preview:\n%s)", tc.query, got, tc.want, body)
		}
	}
	// Bad input.
	if code, _, _ := c.do(t, "GET", "/groups/g/reset?strategy=sideways", "", nil); code != http.StatusBadRequest {
		t.Fatalf("unknown strategy: %d", code)
	}

	// An active group: refused with the reason, in the preview and the confirm.
	cons := newClient(t, c.b.Addr(), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	adm := kadm.NewClient(cl)
	for {
		dg, err := adm.DescribeGroups(ctx, "g")
		if err == nil && dg["g"].State == "Stable" {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cons.PollFetches(pctx) // joins the group; nothing to fetch past the committed offsets
		cancel()
		if ctx.Err() != nil {
			t.Fatal("the group never became Stable")
		}
	}
	before := committed(t, cl, "g")
	code, _, body := c.do(t, "GET", "/groups/g/reset?strategy=earliest", "", nil)
	if code != http.StatusConflict || !strings.Contains(body, "active member") {
		t.Fatalf("active group preview: %d %s", code, body)
	}
	code, body = c.post(t, "/groups/g/reset", "", url.Values{"set": {"orders:0:0"}})
	if code != http.StatusConflict || !strings.Contains(body, "active member") {
		t.Fatalf("active group confirm: %d %s", code, body)
	}
	code, body = c.post(t, "/groups/g/delete", "", url.Values{})
	if code != http.StatusConflict || !strings.Contains(body, "NON_EMPTY_GROUP") {
		t.Fatalf("delete of an active group: %d %s", code, body)
	}
	if after := committed(t, cl, "g"); !sameOffsets(before, after) {
		t.Fatalf("refused actions changed the offsets")
	}
	cons.Close()
	// Now empty: deleted.
	for {
		dg, err := adm.DescribeGroups(ctx, "g")
		if err == nil && dg["g"].State == "Empty" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the group never became Empty")
		}
	}
	if code, body := c.post(t, "/groups/g/delete", "", url.Values{}); code != 200 {
		t.Fatalf("delete group: %d %s", code, body)
	}
	gs, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gs["g"]; ok {
		t.Fatalf("group g still listed after delete: %v", gs)
	}
	if n := len(committed(t, cl, "g")); n != 0 {
		t.Fatalf("deleted group still has %d offsets", n)
	}
}

// TestConsole_TopicActions creates a topic with configs, changes and
// removes a config, produces a record with headers and deletes records, and
// checks each outcome through a Kafka client.
func TestConsole_TopicActions(t *testing.T) {
	c := startConsole(t)
	ctx := testCtx(t)
	cl := newClient(t, c.b.Addr())
	adm := kadm.NewClient(cl)

	code, body := c.post(t, "/topics", "", url.Values{"name": {"events"}, "partitions": {"3"}, "replication_factor": {"1"},
		"configs": {"retention.ms=123456\ncleanup.policy = delete"}})
	if code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	td, err := adm.ListTopics(ctx, "events")
	if err != nil || td["events"].Err != nil || len(td["events"].Partitions) != 3 {
		t.Fatalf("events: %v %+v", err, td["events"])
	}
	cfg := func(name string) (string, kmsg.ConfigSource) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "events")
		if err != nil {
			t.Fatal(err)
		}
		for _, cv := range rcs[0].Configs {
			if cv.Key == name {
				return cv.MaybeValue(), cv.Source
			}
		}
		t.Fatalf("no config %s", name)
		return "", 0
	}
	if v, src := cfg("retention.ms"); v != "123456" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms = %s (%v)", v, src)
	}
	code, body = c.post(t, "/topics", "", url.Values{"name": {"events"}, "partitions": {"1"}})
	if code != http.StatusConflict || !strings.Contains(body, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("create again: %d %s", code, body)
	}
	code, body = c.post(t, "/topics", "", url.Values{"name": {"bad"}, "configs": {"retention.ms=soon"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "INVALID_CONFIG") {
		t.Fatalf("create with a bad config: %d %s", code, body)
	}

	if code, body := c.post(t, "/topics/events/config", "", url.Values{"name": {"retention.ms"}, "value": {"999000"}}); code != 200 {
		t.Fatalf("alter: %d %s", code, body)
	}
	if v, _ := cfg("retention.ms"); v != "999000" {
		t.Fatalf("retention.ms after set = %s", v)
	}
	if code, body := c.post(t, "/topics/events/config", "", url.Values{"name": {"retention.ms"}, "op": {"delete"}}); code != 200 {
		t.Fatalf("alter delete: %d %s", code, body)
	}
	if v, src := cfg("retention.ms"); v != "604800000" || src == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after delete = %s (%v)", v, src)
	}

	// Produce three records to partition 1; the third with headers.
	for i, v := range []string{"a", "b", "c"} {
		form := url.Values{"partition": {"1"}, "key": {"k" + v}, "value": {"value-" + v}}
		if i == 2 {
			form.Set("headers", "trace=abc\nsource=console")
		}
		code, body := c.post(t, "/topics/events/produce", "", form)
		if code != 200 || !strings.Contains(body, "Produced to events-1 at offset "+string(rune('0'+i))+".") {
			t.Fatalf("produce %d: %d %s", i, code, body)
		}
	}
	cons := newClient(t, c.b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"events": {1: kgo.NewOffset().AtStart()}}))
	var got []*kgo.Record
	for len(got) < 3 && ctx.Err() == nil {
		got = append(got, cons.PollFetches(ctx).Records()...)
	}
	if len(got) != 3 {
		t.Fatalf("consumed %d records", len(got))
	}
	last := got[2]
	if last.Offset != 2 || string(last.Key) != "kc" || string(last.Value) != "value-c" || len(last.Headers) != 2 ||
		last.Headers[0].Key != "trace" || string(last.Headers[0].Value) != "abc" || last.Headers[1].Key != "source" || string(last.Headers[1].Value) != "console" {
		t.Fatalf("record: offset %d key %q value %q headers %+v", last.Offset, last.Key, last.Value, last.Headers)
	}
	// By key: the partition the Java client's partitioner picks.
	code, body = c.post(t, "/topics/events/produce", "", url.Values{"key": {"user-42"}, "value": {"x"}})
	want := kgo.StickyKeyPartitioner(nil).ForTopic("events").Partition(&kgo.Record{Key: []byte("user-42")}, 3)
	if code != 200 || !strings.Contains(body, "Produced to events-"+string(rune('0'+want))+" at offset") {
		t.Fatalf("produce by key (want partition %d): %d %s", want, code, body)
	}
	if code, body := c.post(t, "/topics/events/produce", "", url.Values{"partition": {"7"}, "value": {"x"}}); code != http.StatusBadRequest {
		t.Fatalf("produce to partition 7: %d %s", code, body)
	}

	// Delete records below offset 2 of partition 1.
	if code, body := c.post(t, "/topics/events/delete-records", "", url.Values{"partition": {"1"}, "offset": {"2"}}); code != 200 || !strings.Contains(body, "log start offset now 2") {
		t.Fatalf("delete records: %d %s", code, body)
	}
	starts, err := adm.ListStartOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("events", 1); o.Offset != 2 {
		t.Fatalf("log start offset of events-1 = %d, want 2", o.Offset)
	}
	if code, body := c.post(t, "/topics/events/delete-records", "", url.Values{"partition": {"1"}, "offset": {"9"}}); code != http.StatusBadRequest || !strings.Contains(body, "OFFSET_OUT_OF_RANGE") {
		t.Fatalf("delete records above the high watermark: %d %s", code, body)
	}

	// Every action was counted.
	mfs := scrapeURL(t, c.url+"/metrics")
	if v := value(mfs, "gregor_admin_actions_total", "action", "produce", "result", "ok"); v != 4 {
		t.Fatalf("gregor_admin_actions_total{produce,ok} = %v, want 4", v)
	}
	if v := value(mfs, "gregor_admin_actions_total", "action", "create_topic", "result", "refused"); v != 1 {
		t.Fatalf("gregor_admin_actions_total{create_topic,refused} = %v, want 1", v)
	}
}

// TestConsole_AuthBasicAndACLs: 401 without or with wrong credentials,
// 403 without the ACL, each action allowed once its ACL is granted; probes
// and (by default) /metrics stay open.
func TestConsole_AuthBasicAndACLs(t *testing.T) {
	var audit syncBuffer
	c := startConsoleLog(t, slog.New(slog.NewTextHandler(&audit, nil)), gregortest.Topic("orders", 1, nil),
		gregortest.Prop("admin.auth", "basic"),
		gregortest.Prop("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		gregortest.Prop("super.users", "User:ANONYMOUS"))
	for _, u := range []string{"alice", "mallory"} {
		if err := broker.AddUser(c.b.DataDir(), u, "SCRAM-SHA-256", u+"-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	su := newClient(t, c.b.Addr()) // ANONYMOUS on the PLAINTEXT listener: a super user here
	grant := func(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		t.Helper()
		req := kmsg.NewPtrCreateACLsRequest()
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = rt, name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
		resp, err := req.RequestWith(testCtx(t), su)
		if err != nil || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("CreateAcls: %v %v", err, resp)
		}
	}

	code, hdr, _ := c.do(t, "GET", "/", "", nil)
	if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("no credentials: %d %q", code, hdr.Get("WWW-Authenticate"))
	}
	req, _ := http.NewRequest("GET", c.url+"/", nil)
	req.SetBasicAuth("alice", "wrong")
	if resp, err := c.cl.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	if code, _, _ := c.do(t, "GET", "/", "nobody", nil); code != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d", code)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _, body := c.do(t, "GET", p, "", nil); code != 200 {
			t.Fatalf("%s without credentials: %d %s", p, code, body)
		}
	}
	// Authenticated, but no DESCRIBE on the cluster.
	if code, _, body := c.do(t, "GET", "/", "mallory", nil); code != http.StatusForbidden || !strings.Contains(body, "DESCRIBE on the cluster") {
		t.Fatalf("mallory: %d %s", code, body)
	}
	// Fault injection: 401 without credentials, 403 without ALTER on the cluster.
	fault := url.Values{}
	if code, _, _ := c.do(t, "POST", "/admin/faults", "", fault); code != http.StatusUnauthorized {
		t.Fatalf("faults without credentials: %d", code)
	}
	if code, _, _ := c.do(t, "DELETE", "/admin/faults", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("DELETE faults without credentials: %d", code)
	}
	grant(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationDescribe)
	code, _, body := c.do(t, "GET", "/", "alice", nil)
	if code != 200 || !strings.Contains(body, "User:alice") {
		t.Fatalf("alice: %d %s", code, body)
	}
	if code, _, _ := c.do(t, "DELETE", "/admin/faults", "alice", nil); code != http.StatusForbidden {
		t.Fatalf("alice clears faults without ALTER: %d", code)
	}
	grant(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationAlter)
	if code, _, _ := c.do(t, "DELETE", "/admin/faults", "alice", nil); code != http.StatusNoContent {
		t.Fatalf("alice clears faults with ALTER: %d", code)
	}
	// A CSRF token is one principal's: mallory's does not serve alice.
	form := url.Values{"partition": {"0"}, "value": {"hi"}, "csrf": {"x"}}
	if code, _, _ := c.do(t, "POST", "/topics/orders/produce", "alice", form); code != http.StatusForbidden {
		t.Fatalf("bad csrf: %d", code)
	}

	// Each action: 403 without its ACL, done with it.
	steps := []struct {
		path   string
		form   url.Values
		grants func()
	}{
		{"/topics/orders/produce", url.Values{"partition": {"0"}, "value": {"hi"}}, func() { grant(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationWrite) }},
		{"/topics/orders/config", url.Values{"name": {"retention.ms"}, "value": {"1000"}}, func() { grant(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationAlterConfigs) }},
		{"/topics/orders/delete-records", url.Values{"partition": {"0"}, "offset": {"1"}}, func() { grant(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationDelete) }},
		{"/topics", url.Values{"name": {"fresh"}, "partitions": {"1"}}, func() { grant(kmsg.ACLResourceTypeTopic, "fresh", kmsg.ACLOperationCreate) }},
	}
	for _, st := range steps {
		if code, body := c.post(t, st.path, "alice", st.form); code != http.StatusForbidden {
			t.Fatalf("%s without the ACL: %d %s", st.path, code, body)
		}
		st.grants()
		if code, body := c.post(t, st.path, "alice", st.form); code != 200 {
			t.Fatalf("%s with the ACL: %d %s", st.path, code, body)
		}
	}
	// Offset reset: READ on the group and on the topic.
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1})
	if resp, err := kadm.NewClient(su).CommitOffsets(testCtx(t), "g", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp)
	}
	if code, _, body := c.do(t, "GET", "/groups/g/reset?strategy=earliest", "alice", nil); code != http.StatusForbidden || !strings.Contains(body, "READ on group g") {
		t.Fatalf("reset without READ on the group: %d %s", code, body)
	}
	grant(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationRead)
	if code, _, body := c.do(t, "GET", "/groups/g/reset?strategy=earliest", "alice", nil); code != http.StatusForbidden || !strings.Contains(body, "READ on topic orders") {
		t.Fatalf("reset without READ on the topic: %d %s", code, body)
	}
	// Browsing records: READ on the topic too.
	if code, _, body := c.do(t, "GET", "/topics/orders/0?order=oldest", "alice", nil); code != http.StatusForbidden || !strings.Contains(body, "READ on topic orders") {
		t.Fatalf("browse without READ on the topic: %d %s", code, body)
	}
	grant(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationRead)
	if code, _, body := c.do(t, "GET", "/topics/orders/0?order=oldest", "alice", nil); code != 200 || !strings.Contains(body, `id="scan-summary"`) {
		t.Fatalf("browse with READ on the topic: %d %s", code, body)
	}
	if code, body := c.post(t, "/groups/g/reset", "alice", url.Values{"set": {"orders:0:0"}}); code != 200 {
		t.Fatalf("reset with the ACLs: %d %s", code, body)
	}
	if got := committed(t, su, "g"); got[0] != 0 {
		t.Fatalf("committed %v after the reset", got)
	}
	if code, body := c.post(t, "/groups/g/delete", "alice", url.Values{}); code != http.StatusForbidden {
		t.Fatalf("delete group without DELETE: %d %s", code, body)
	}
	grant(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLOperationDelete)
	if code, body := c.post(t, "/groups/g/delete", "alice", url.Values{}); code != 200 {
		t.Fatalf("delete group with DELETE: %d %s", code, body)
	}
	mfs := scrapeURL(t, c.url+"/metrics")
	if v := value(mfs, "gregor_admin_actions_total", "action", "produce", "result", "denied"); v != 2 { // bad csrf, no ACL
		t.Fatalf("gregor_admin_actions_total{produce,denied} = %v, want 2", v)
	}
	// The audit log names the principal of each action.
	for _, want := range []string{
		`msg="admin console action" action=produce principal=User:alice host=127.0.0.1 result=ok message="Produced to orders-0 at offset 0." topic=orders partition=0 offset=0`,
		`msg="admin console action" action=delete_group principal=User:alice host=127.0.0.1 result=ok message="Deleted group g." group=g`,
		`msg="admin console action" action=reset_offsets principal=User:alice host=127.0.0.1 result=ok message="Committed 1 offset(s) for group g." group=g offsets="orders-0=0"`,
	} {
		if !strings.Contains(audit.String(), want) {
			t.Errorf("audit log lacks %s:\n%s", want, audit.String())
		}
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConsole_MetricsAuth: admin.metrics.auth=true puts /metrics behind
// authentication; the probes stay open.
func TestConsole_MetricsAuth(t *testing.T) {
	c := startConsole(t, gregortest.Prop("admin.auth", "basic"), gregortest.Prop("admin.metrics.auth", "true"))
	if err := broker.AddUser(c.b.DataDir(), "alice", "SCRAM-SHA-512", "alice-pw", 0); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := c.do(t, "GET", "/metrics", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without credentials: %d", code)
	}
	if code, _, _ := c.do(t, "GET", "/metrics", "alice", nil); code != 200 {
		t.Fatalf("/metrics as alice: %d", code)
	}
	if code, _, _ := c.do(t, "GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
}

// TestConsole_CrossSiteRefused: a browser's cross-site POST is refused
// even with valid credentials.
func TestConsole_CrossSiteRefused(t *testing.T) {
	c := startConsole(t)
	req, _ := http.NewRequest("DELETE", c.url+"/admin/faults", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := c.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site DELETE: %d", resp.StatusCode)
	}
}

// testCert makes a certificate signed by parent (self-signed when nil).
func testCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true, IsCA: ca}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestConsole_TLSAndClientCertificates serves HTTPS with the configured
// certificate, authenticates a verified client certificate as its mapped
// principal and refuses a client without one.
func TestConsole_TLSAndClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caPEM, _ := testCert(t, "test-ca", nil, nil, true)
	srvCert, _, srvPEM, srvKey := testCert(t, "gregor-admin", ca, caKey, false)
	_, _, clientPEM, clientKey := testCert(t, "carol", ca, caKey, false)
	keystore := filepath.Join(dir, "admin.pem")
	truststore := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(keystore, append(append([]byte{}, srvKey...), srvPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truststore, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	b := gregortest.Start(t,
		gregortest.Prop("admin.auth", "mtls,basic"),
		gregortest.Prop("admin.ssl.keystore.location", keystore),
		gregortest.Prop("admin.ssl.truststore.location", truststore),
		gregortest.Prop("admin.ssl.client.auth", "requested"),
		gregortest.Prop("admin.ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/,DEFAULT"))
	srv, err := admin.New(b.Broker, admin.Options{SampleInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go hs.Serve(srv.Listen(ln))
	t.Cleanup(func() { hs.Shutdown(context.Background()) })
	base := "https://" + ln.Addr().String()

	roots := x509.NewCertPool()
	roots.AddCert(ca)
	clientFor := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
	}
	anon := clientFor()
	resp, err := anon.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || !resp.TLS.PeerCertificates[0].Equal(srvCert) {
		t.Fatalf("/healthz over TLS: %d, served certificate is not the configured one", resp.StatusCode)
	}
	resp, err = anon.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no certificate, no password: %d", resp.StatusCode)
	}
	pair, err := tls.X509KeyPair(clientPEM, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = clientFor(pair).Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "User:carol") {
		t.Fatalf("client certificate: %d %s", resp.StatusCode, body)
	}
	// Plain HTTP to the TLS port does not get the console.
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ln.Addr().String() + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP served the console on the TLS listener")
		}
	}
}

func scrapeURL(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, u)
	if code != 200 {
		t.Fatalf("%s: %d %s", u, code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", u, err)
	}
	return mfs
}
