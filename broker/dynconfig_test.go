package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConfig describes one config of a resource with synonyms:
// "value/SOURCE/readOnly [name=value/SOURCE ...]".
func describeConfig(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, resource, name string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = typ, resource, []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe %s of %q: %+v", name, resource, resp.Resources)
	}
	if len(resp.Resources[0].Configs) == 0 {
		return "absent"
	}
	return fmtConfig(resp.Resources[0].Configs[0])
}

func fmtConfig(c kmsg.DescribeConfigsResponseResourceConfig) string {
	val := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	var syns []string
	for _, s := range c.ConfigSynonyms {
		syns = append(syns, fmt.Sprintf("%s=%s/%s", s.Name, val(s.Value), s.Source))
	}
	return fmt.Sprintf("%s/%s/%v [%s]", val(c.Value), c.Source, c.ReadOnly, strings.Join(syns, " "))
}

// configConn sends config requests on one connection to one broker, as
// franz-go routes a BROKER resource to the broker it names (and cannot
// reach broker 7).
type configConn struct {
	rc   *rawConn
	corr int32
}

func newConfigConn(t *testing.T, addr string) *configConn { return &configConn{rc: dialRaw(t, addr)} }

// incAlterBroker sends one IncrementalAlterConfigs (v1) on a BROKER
// resource and returns "ERROR_NAME: message" or "ok".
func incAlterBroker(t *testing.T, c *configConn, resource string, validateOnly bool, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) string {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	req.ValidateOnly = validateOnly
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeBroker, resource, configs
	req.Resources = append(req.Resources, res)
	c.corr++
	c.rc.send(c.corr, req)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.Version = 1
	c.rc.recv(c.corr, resp)
	return resultString(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
}

func resultString(code int16, msg *string) string {
	if code == 0 {
		return "ok"
	}
	s := kerr.ErrorForCode(code).(*kerr.Error).Message
	if msg != nil {
		s += ": " + *msg
	}
	return s
}

func op(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Op, c.Name, c.Value = o, name, value
	return c
}

func set(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return op(kmsg.IncrementalAlterConfigOpSet, name, kmsg.StringPtr(value))
}

// The dynamic broker configs on a single node, over the wire: each step's
// result and what DescribeConfigs then reports, with sources and synonyms
// in Kafka's order.
func TestDynamicBrokerConfigs_AlterAndDescribe(t *testing.T) {
	_, addr := startBroker(t, "", map[string]string{"log.retention.ms": "86400000"})
	cl := newClient(t, addr)
	rc := newConfigConn(t, addr)
	topicCl := kadm.NewClient(cl)
	if _, err := topicCl.CreateTopic(testCtx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := topicCl.CreateTopic(testCtx(t), 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000")}, "over"); err != nil {
		t.Fatal(err)
	}
	broker, cluster, topic := kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeTopic
	type check struct {
		typ            kmsg.ConfigResourceType
		resource, name string
		want           string
	}
	steps := []struct {
		name   string
		do     func() string
		want   string
		checks []check
	}{
		{"before any change", func() string { return "ok" }, "ok", []check{
			{broker, "0", "log.retention.ms", "86400000/STATIC_BROKER_CONFIG/false [log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
			{broker, "0", "num.partitions", "1/DEFAULT_CONFIG/true [num.partitions=1/DEFAULT_CONFIG]"},
			{cluster, "", "log.retention.ms", "absent"},
		}},
		{"cluster-wide default", func() string { return incAlterBroker(t, rc, "", false, set("log.retention.ms", "3600000")) }, "ok", []check{
			{broker, "0", "log.retention.ms", "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
			{cluster, "", "log.retention.ms", "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG]"},
			{topic, "t", "retention.ms", "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
			{topic, "over", "retention.ms", "1000/DYNAMIC_TOPIC_CONFIG/false [retention.ms=1000/DYNAMIC_TOPIC_CONFIG log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
		}},
		{"per-broker", func() string { return incAlterBroker(t, rc, "0", false, set("log.retention.ms", "7200000")) }, "ok", []check{
			{broker, "0", "log.retention.ms", "7200000/DYNAMIC_BROKER_CONFIG/false [log.retention.ms=7200000/DYNAMIC_BROKER_CONFIG log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
			{cluster, "", "log.retention.ms", "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG]"},
			{topic, "t", "retention.ms", "7200000/DYNAMIC_BROKER_CONFIG/false [log.retention.ms=7200000/DYNAMIC_BROKER_CONFIG log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
		}},
		{"per-broker deleted", func() string {
			return incAlterBroker(t, rc, "0", false, op(kmsg.IncrementalAlterConfigOpDelete, "log.retention.ms", nil))
		}, "ok", []check{
			{topic, "t", "retention.ms", "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
		}},
		{"append to a list config", func() string {
			return incAlterBroker(t, rc, "", false, op(kmsg.IncrementalAlterConfigOpAppend, "log.cleanup.policy", kmsg.StringPtr("compact")))
		}, "ok", []check{
			{cluster, "", "log.cleanup.policy", "delete,compact/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.cleanup.policy=delete,compact/DYNAMIC_DEFAULT_BROKER_CONFIG]"},
			{topic, "t", "cleanup.policy", "delete,compact/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.cleanup.policy=delete,compact/DYNAMIC_DEFAULT_BROKER_CONFIG log.cleanup.policy=delete/DEFAULT_CONFIG]"},
		}},
		{"thread count within bounds", func() string { return incAlterBroker(t, rc, "", false, set("num.io.threads", "16")) }, "ok", []check{
			{broker, "0", "num.io.threads", "16/DYNAMIC_DEFAULT_BROKER_CONFIG/false [num.io.threads=16/DYNAMIC_DEFAULT_BROKER_CONFIG num.io.threads=8/DEFAULT_CONFIG]"},
		}},
		{"validate only", func() string { return incAlterBroker(t, rc, "", true, set("log.segment.bytes", "2097152")) }, "ok", []check{
			{cluster, "", "log.segment.bytes", "absent"},
		}},
		{"not dynamic", func() string {
			return incAlterBroker(t, rc, "", false, set("num.partitions", "3"), set("log.retention.hours", "1"))
		},
			"INVALID_REQUEST: Cannot update these configs dynamically: [log.retention.hours, num.partitions]", nil},
		{"not a number", func() string { return incAlterBroker(t, rc, "", false, set("log.retention.ms", "forever")) },
			"INVALID_REQUEST: Invalid value forever for configuration log.retention.ms: Not a number of type LONG", nil},
		{"out of range", func() string { return incAlterBroker(t, rc, "", false, set("min.insync.replicas", "0")) },
			"INVALID_REQUEST: Invalid value 0 for configuration min.insync.replicas: Value must be at least 1", nil},
		{"not a boolean", func() string { return incAlterBroker(t, rc, "", false, set("unclean.leader.election.enable", "yes")) },
			"INVALID_REQUEST: Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false", nil},
		{"thread count too high", func() string { return incAlterBroker(t, rc, "", false, set("num.io.threads", "40")) },
			"INVALID_REQUEST: Dynamic thread count update validation failed for num.io.threads=40, value should not be greater than double the current value 16", nil},
		{"another broker", func() string { return incAlterBroker(t, rc, "7", false, set("log.retention.ms", "1")) },
			"INVALID_REQUEST: Unexpected broker id, expected 0, but received 7", nil},
		{"not a node id", func() string { return incAlterBroker(t, rc, "x", false, set("log.retention.ms", "1")) },
			"INVALID_REQUEST: Node id must be an integer, but it is: x", nil},
		{"null value", func() string {
			return incAlterBroker(t, rc, "", false, op(kmsg.IncrementalAlterConfigOpSet, "log.retention.ms", nil))
		}, "INVALID_REQUEST: Null value not supported for : log.retention.ms", nil},
		{"append to a non-list", func() string {
			return incAlterBroker(t, rc, "", false, op(kmsg.IncrementalAlterConfigOpAppend, "log.retention.ms", kmsg.StringPtr("1")))
		}, "INVALID_CONFIG: Config value append is not allowed for config key: log.retention.ms", nil},
		{"duplicate keys", func() string {
			return incAlterBroker(t, rc, "", false, set("log.retention.ms", "1"), set("log.retention.ms", "2"))
		},
			"INVALID_REQUEST: Error due to duplicate config keys", nil},
		{"legacy AlterConfigs replaces the defaults", func() string {
			req := kmsg.NewPtrAlterConfigsRequest()
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType = kmsg.ConfigResourceTypeBroker
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "message.max.bytes", kmsg.StringPtr("2000000")
			res.Configs = append(res.Configs, c)
			req.Resources = append(req.Resources, res)
			resp, err := req.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			return resultString(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
		}, "ok", []check{
			{cluster, "", "log.retention.ms", "absent"},
			{topic, "t", "max.message.bytes", "2000000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [message.max.bytes=2000000/DYNAMIC_DEFAULT_BROKER_CONFIG message.max.bytes=1048588/DEFAULT_CONFIG]"},
			{topic, "t", "retention.ms", "86400000/STATIC_BROKER_CONFIG/false [log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"},
		}},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %q, want %q", s.name, got, s.want)
		}
		for _, c := range s.checks {
			if got := describeConfig(t, cl, c.typ, c.resource, c.name); got != c.want {
				t.Errorf("%s: describe %s of %q:\n got  %s\n want %s", s.name, c.name, c.resource, got, c.want)
			}
		}
	}
}

// startOffset is a partition's log start offset.
func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	so, err := adm.ListStartOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := so.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("start offset of %s: %+v", topic, o)
	}
	return o.Offset
}

// Lowering the cluster-wide log.retention.ms deletes the old segments of a
// topic without a retention.ms override on the next retention pass; a
// topic with an override keeps them. The setting survives a restart.
func TestDynamicBrokerConfigs_RetentionFollowsDefault(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"log.roll.ms": "1", "log.retention.check.interval.ms": "10"}
	b, addr := startBroker(t, dir, props)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "follows"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("-1")}, "keeps"); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, topic := range []string{"follows", "keeps"} {
		for i := range 3 {
			r := &kgo.Record{Topic: topic, Value: []byte{byte(i)}, Timestamp: old}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if so := startOffset(t, adm, "follows"); so != 0 {
		t.Fatalf("start offset before the change: %d", so)
	}
	rc := newConfigConn(t, addr)
	if got := incAlterBroker(t, rc, "", false, set("log.retention.ms", "3600000")); got != "ok" {
		t.Fatalf("alter: %s", got)
	}
	// Every record is older than the new retention: all three go, the
	// active segment's too.
	waitFor(t, 10*time.Second, "the old segments of follows to be deleted", func() bool {
		return startOffset(t, adm, "follows") == 3
	})
	if so := startOffset(t, adm, "keeps"); so != 0 {
		t.Fatalf("keeps (retention.ms=-1) lost records: start offset %d", so)
	}

	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, addr = startBroker(t, dir, props)
	cl = newClient(t, addr)
	want := "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"
	if got := describeConfig(t, cl, kmsg.ConfigResourceTypeTopic, "follows", "retention.ms"); got != want {
		t.Errorf("after restart:\n got  %s\n want %s", got, want)
	}
	if got := describeConfig(t, cl, kmsg.ConfigResourceTypeBroker, "", "log.retention.ms"); !strings.HasPrefix(got, "3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false") {
		t.Errorf("cluster-wide default after restart: %s", got)
	}
}

// In a two-broker cluster a cluster-wide default set through broker 1 is
// in etcd and applies on broker 2; a per-broker config of broker 1 does
// not, and broker 2 refuses to change broker 1's.
func TestCluster_DynamicBrokerConfigsInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs := startTwoBrokerCluster(t)
	c1, c2 := newConfigConn(t, addrs[0]), newConfigConn(t, addrs[1])
	cl2 := newClient(t, addrs[1])
	if got := incAlterBroker(t, c1, "", false, set("log.retention.ms", "3600000"), set("min.insync.replicas", "2")); got != "ok" {
		t.Fatalf("set default: %s", got)
	}
	if got := incAlterBroker(t, c1, "1", false, set("log.retention.ms", "7200000")); got != "ok" {
		t.Fatalf("set broker 1: %s", got)
	}
	waitFor(t, 10*time.Second, "broker 2 to apply the cluster-wide default", func() bool {
		return describeConfig(t, cl2, kmsg.ConfigResourceTypeBroker, "2", "log.retention.ms") ==
			"3600000/DYNAMIC_DEFAULT_BROKER_CONFIG/false [log.retention.ms=3600000/DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.hours=168/DEFAULT_CONFIG]"
	})
	if v, src := brokers[1].topicConfigValue(nil, "min.insync.replicas"); v != "2" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("broker 2's min.insync.replicas for topics: %s %v", v, src)
	}
	if v, src := brokers[0].topicConfigValue(nil, "retention.ms"); v != "7200000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("broker 1's retention.ms for topics: %s %v", v, src)
	}
	if got := incAlterBroker(t, c2, "1", false, set("log.retention.ms", "1")); got != "INVALID_REQUEST: Unexpected broker id, expected 2, but received 1" {
		t.Errorf("broker 2 altering broker 1: %s", got)
	}
	if got := incAlterBroker(t, c2, "", false, op(kmsg.IncrementalAlterConfigOpDelete, "min.insync.replicas", nil)); got != "ok" {
		t.Fatalf("delete through broker 2: %s", got)
	}
	waitFor(t, 10*time.Second, "broker 1 to see the deletion", func() bool {
		v, src := brokers[0].topicConfigValue(nil, "min.insync.replicas")
		return v == "1" && src == kmsg.ConfigSourceDefaultConfig
	})
}
