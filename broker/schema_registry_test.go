package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

type srUser struct {
	Name string `avro:"name"`
	Age  int    `avro:"age"`
}

const srUserSchema = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}`

// TestSchemaRegistry_RealClientThroughABroker: with
// schema.registry.listeners set, franz-go's sr client registers an Avro
// schema, a producer sends a value in Confluent's wire format and a
// consumer decodes it through the registry; _schemas holds Confluent's
// records; after a restart the schema is served with the same id and an
// incompatible one is still refused.
func TestSchemaRegistry_RealClientThroughABroker(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"schema.registry.listeners": "http://127.0.0.1:0"}
	b, addr := startBroker(t, dir, props)
	ctx := testCtx(t)
	url := "http://" + b.SchemaRegistryAddr().String()
	rcl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: srUserSchema})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != 1 || ss.Version != 1 {
		t.Fatalf("registered %+v, want id 1 version 1", ss)
	}
	schema := avro.MustParse(srUserSchema)
	var serde sr.Serde
	serde.Register(ss.ID, srUser{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	value, err := serde.Encode(srUser{Name: "ada", Age: 36})
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr, kgo.DefaultProduceTopic("users"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("users", schemasTopicName), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var user srUser
	var schemasKeys []string
	for user.Name == "" || len(schemasKeys) == 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch r.Topic {
			case "users":
				if err := serde.Decode(r.Value, &user); err != nil {
					t.Fatal(err)
				}
			case schemasTopicName:
				schemasKeys = append(schemasKeys, fmt.Sprintf("%d %s", r.Offset, r.Key))
			}
		})
	}
	if user != (srUser{Name: "ada", Age: 36}) {
		t.Fatalf("decoded %+v", user)
	}
	if want := `[0 {"keytype":"SCHEMA","subject":"users-value","version":1,"magic":1}]`; fmt.Sprint(schemasKeys) != want {
		t.Fatalf("_schemas holds %v, want %s", schemasKeys, want)
	}
	cl.Close()
	b.Close()

	b, _ = startBroker(t, dir, props)
	rcl, err = sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := rcl.SchemaByID(context.Background(), 1)
	if err != nil || got.Schema == "" {
		t.Fatalf("after a restart: schema 1: %+v %v", got, err)
	}
	again, err := rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: srUserSchema})
	if err != nil || again.ID != 1 || again.Version != 1 {
		t.Fatalf("after a restart, the same schema: %+v %v; want id 1 version 1", again, err)
	}
	_, err = rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`})
	if re, ok := err.(*sr.ResponseError); !ok || re.ErrorCode != 409 {
		t.Fatalf("after a restart, an incompatible schema: %v, want 409", err)
	}
}

// TestSchemaRegistry_Cluster: on three brokers, a schema registered
// through one is served by the others at once (they forward to the
// registry of the leader of _schemas-0), ids stay unique whichever broker
// takes the registration, and registration still works once the leader of
// _schemas-0 is stopped.
func TestSchemaRegistry_Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, _, stop := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{"schema.registry.listeners": "http://127.0.0.1:0", "replica.fetch.wait.max.ms": "100"}
	})
	ctx := testCtx(t)
	client := func(i int) *sr.Client {
		t.Helper()
		cl, err := sr.NewClient(sr.URLs("http://" + brokers[i].SchemaRegistryAddr().String()))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	schemaOf := func(field string) string {
		return `{"type":"record","name":"R","fields":[{"name":"` + field + `","type":"string"}]}`
	}
	// One subject per broker, registered through it.
	for i := range brokers {
		ss, err := client(i).CreateSchema(ctx, fmt.Sprintf("s%d", i), sr.Schema{Schema: schemaOf(fmt.Sprintf("f%d", i))})
		if err != nil {
			t.Fatalf("register through broker %d: %v", i+1, err)
		}
		if ss.ID != i+1 {
			t.Fatalf("register through broker %d: id %d, want %d", i+1, ss.ID, i+1)
		}
		for j := range brokers {
			got, err := client(j).SchemaByID(ctx, ss.ID)
			if err != nil || got.Schema == "" {
				t.Fatalf("schema %d through broker %d right after its registration through %d: %+v %v", ss.ID, j+1, i+1, got, err)
			}
		}
	}
	leader := -1
	for i, b := range brokers {
		if p := partitionOf(b, schemasTopicName); p != nil && p.leader.Load() != nil {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no broker leads _schemas-0")
	}
	stop[leader]()
	other := (leader + 1) % 3
	var ss sr.SubjectSchema
	waitFor(t, 30*time.Second, "a registration through a surviving broker", func() bool {
		var err error
		ss, err = client(other).CreateSchema(ctx, "after", sr.Schema{Schema: schemaOf("after")})
		return err == nil
	})
	if ss.ID != 4 {
		t.Fatalf("after the leader stopped: id %d, want 4", ss.ID)
	}
	if got, err := client(3-leader-other).SchemaByID(ctx, 1); err != nil || got.Schema == "" {
		t.Fatalf("schema 1 through the third broker: %+v %v", got, err)
	}
}

// TestSchemaRegistry_TLSAndAuth: on two brokers serving the registry over
// HTTPS with schema.registry.auth=basic,mtls, a request with no
// credentials or a wrong password gets Confluent's 401; a SCRAM user's
// password or a client certificate of the trusted CA gets in; a
// registration through either broker (one of them forwards, over TLS, to
// the leader of _schemas-0) gets the next id and is served by both.
func TestSchemaRegistry_TLSAndAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	pki := newTestPKI(t)
	serverStore, _ := pki.keystore(t, "registry", "registry")
	_, clientCert := pki.keystore(t, "client", "app")
	brokers, _, _ := startEtcdBrokers(t, 2, func(_ int, dir string) map[string]string {
		if err := AddUser(dir, "alice", "SCRAM-SHA-256", "alice-pw", 0); err != nil {
			t.Fatal(err)
		}
		return map[string]string{
			"schema.registry.listeners":               "https://127.0.0.1:0",
			"schema.registry.auth":                    "basic,mtls",
			"schema.registry.ssl.keystore.location":   serverStore,
			"schema.registry.ssl.truststore.location": pki.caPath,
			"schema.registry.ssl.client.auth":         "requested",
		}
	})
	ctx := testCtx(t)
	url := func(i int) string { return "https://" + brokers[i].SchemaRegistryAddr().String() }
	httpClient := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pki.clientTLS(certs...)}}
	}
	get := func(c *http.Client, target, user, pass string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", target, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct{ user, pass string }{{"", ""}, {"alice", "wrong"}, {"mallory", "x"}} {
		if code, body := get(httpClient(), url(0)+"/subjects", tc.user, tc.pass); code != 401 || body != `{"error_code":401,"message":"Unauthorized"}` {
			t.Fatalf("%q/%q: %d %s, want Confluent's 401", tc.user, tc.pass, code, body)
		}
	}
	if code, body := get(httpClient(), url(1)+"/subjects", "alice", "alice-pw"); code != 200 || body != "[]" {
		t.Fatalf("alice: %d %s", code, body)
	}
	if code, body := get(httpClient(clientCert), url(0)+"/subjects", "", ""); code != 200 || body != "[]" {
		t.Fatalf("a client certificate: %d %s", code, body)
	}
	// Plain HTTP to the HTTPS port: Go's TLS server answers 400.
	if code, _ := get(&http.Client{Timeout: 5 * time.Second}, "http://"+brokers[0].SchemaRegistryAddr().String()+"/subjects", "alice", "alice-pw"); code != 400 {
		t.Fatalf("plain HTTP to the HTTPS listener: %d, want 400", code)
	}
	for i := range brokers {
		cl, err := sr.NewClient(sr.URLs(url(i)), sr.HTTPClient(httpClient()), sr.BasicAuth("alice", "alice-pw"))
		if err != nil {
			t.Fatal(err)
		}
		ss, err := cl.CreateSchema(ctx, fmt.Sprintf("s%d", i), sr.Schema{Schema: fmt.Sprintf(`{"type":"record","name":"R","fields":[{"name":"f%d","type":"string"}]}`, i)})
		if err != nil || ss.ID != i+1 {
			t.Fatalf("register through broker %d: %+v %v", i+1, ss, err)
		}
		other, err := sr.NewClient(sr.URLs(url(1-i)), sr.HTTPClient(httpClient(clientCert)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := other.SchemaByID(ctx, ss.ID); err != nil || got.Schema == "" {
			t.Fatalf("schema %d through broker %d: %+v %v", ss.ID, 2-i, got, err)
		}
	}
}

// TestSchemaValidation_RefusesUnregisteredIDs: a topic with
// confluent.value.schema.validation=true takes values in Confluent's wire
// format whose schema id is registered under <topic>-value, and null
// values; a batch with a plain value, an unknown id or an id of another
// subject is refused whole with INVALID_RECORD; a schema registered
// afterwards is accepted at once; a topic without the config takes
// anything, and lists no confluent.* config.
func TestSchemaValidation_RefusesUnregisteredIDs(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"schema.registry.listeners": "http://127.0.0.1:0"})
	ctx := testCtx(t)
	reg, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	register := func(subject, field string) int {
		t.Helper()
		ss, err := reg.CreateSchema(ctx, subject, sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"` + field + `","type":"string","default":""}]}`})
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	ordersID, otherID := register("orders-value", "a"), register("other-value", "b")
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"confluent.value.schema.validation": kmsg.StringPtr("true")}, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "free"); err != nil {
		t.Fatal(err)
	}
	wire := func(id int, payload string) []byte {
		return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, payload...)
	}
	produce := func(topic string, values ...[]byte) error {
		t.Helper()
		var rs []*kgo.Record
		for _, v := range values {
			rs = append(rs, &kgo.Record{Topic: topic, Value: v})
		}
		return cl.ProduceSync(ctx, rs...).FirstErr()
	}
	if err := produce("orders", wire(ordersID, "x"), nil, wire(ordersID, "y")); err != nil {
		t.Fatalf("registered id and a tombstone: %v", err)
	}
	for name, v := range map[string][]byte{
		"plain value":      []byte("hello"),
		"unknown id":       wire(999, "x"),
		"another subject":  wire(otherID, "x"),
		"too short":        {0, 0, 1},
		"wrong magic byte": append([]byte{1}, wire(ordersID, "x")[1:]...),
	} {
		if err := produce("orders", wire(ordersID, "ok"), v); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: %v, want INVALID_RECORD", name, err)
		}
	}
	if ends, err := adm.ListEndOffsets(ctx, "orders"); err != nil {
		t.Fatal(err)
	} else if o, _ := ends.Lookup("orders", 0); o.Offset != 3 {
		t.Fatalf("orders ends at %d after the refused batches, want 3", o.Offset)
	}
	// The other schema registered under orders-value too: accepted now.
	if id := register("orders-value", "b"); id != otherID {
		t.Fatalf("the same schema under orders-value got id %d, want %d", id, otherID)
	}
	if err := produce("orders", wire(otherID, "z")); err != nil {
		t.Fatalf("id %d once registered under orders-value: %v", otherID, err)
	}
	if err := produce("free", []byte("hello"), wire(999, "x")); err != nil {
		t.Fatalf("a topic without validation: %v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders", "free")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		var got []string
		for _, c := range rc.Configs {
			if strings.HasPrefix(c.Key, "confluent.") {
				got = append(got, c.Key+"="+c.MaybeValue())
			}
		}
		want := map[string]string{"orders": "confluent.value.schema.validation=true", "free": ""}[rc.Name]
		if strings.Join(got, ",") != want {
			t.Errorf("%s lists %v, want %q", rc.Name, got, want)
		}
	}
}

// TestSchemaIDEntry_Usable: when a cached id answers a lookup, with and
// without a replica of _schemas-0 here.
func TestSchemaIDEntry_Usable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	e := schemaIDEntry{subjects: []string{"t-value"}, at: t0, hw: 10}
	for _, tc := range []struct {
		name          string
		refresh       bool
		hw            int64
		after         time.Duration
		cached, fresh bool
	}{
		{"replica, not grown", false, 10, time.Second, true, true},
		{"replica, not grown, refresh", true, 10, time.Second, true, true},
		{"replica, grown", false, 11, time.Second, true, false},
		{"replica, grown, refresh", true, 11, time.Second, false, false},
		{"expired", false, 10, schemaCacheTTL, false, false},
		{"no replica", false, -1, 30 * time.Second, true, false},
		{"no replica, refresh within a second", true, -1, 500 * time.Millisecond, true, true},
		{"no replica, refresh after a second", true, -1, schemaRereadNoReplica, false, false},
	} {
		cached, fresh := e.usable(tc.refresh, tc.hw, t0.Add(tc.after))
		if cached != tc.cached || fresh != tc.fresh {
			t.Errorf("%s: cached %v fresh %v, want %v %v", tc.name, cached, fresh, tc.cached, tc.fresh)
		}
	}
}

// TestSchemaValidation_ClusterFollowerSeesNewSchemas: on three brokers,
// the leader of a validated topic is a follower of _schemas-0 whose own
// replica is stalled (a fault on the leader of _schemas-0 holds its
// fetches), so that replica never has a schema registered now; a record
// with that schema's id is accepted at once, because the follower's view
// is read from the leader of _schemas-0, and an unregistered id is still
// refused.
func TestSchemaValidation_ClusterFollowerSeesNewSchemas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, addrs, _ := startEtcdBrokers(t, 3, func(int, string) map[string]string {
		return map[string]string{"schema.registry.listeners": "http://127.0.0.1:0", "replica.fetch.wait.max.ms": "100",
			"replica.lag.time.max.ms": "1000"}
	})
	ctx := testCtx(t)
	reg, err := sr.NewClient(sr.URLs("http://" + brokers[0].SchemaRegistryAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	register := func(field string) int {
		t.Helper()
		ss, err := reg.CreateSchema(ctx, "validated-value", sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"` + field + `","type":"string","default":""}]}`})
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	first := register("a") // creates _schemas
	var leader int32 = -1
	waitFor(t, 30*time.Second, "a leader of _schemas-0", func() bool {
		for _, b := range brokers {
			if p := partitionOf(b, schemasTopicName); p != nil && p.leader.Load() != nil {
				leader = b.nodeID
				return true
			}
		}
		return false
	})
	follower := leader%3 + 1
	admin := newClient(t, addrs[0])
	// Created with validation on (an alteration sent right after the
	// creation may reach a broker that does not know the topic yet).
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "validated", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{follower}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	rc := kmsg.NewCreateTopicsRequestTopicConfig()
	rc.Name, rc.Value = "confluent.value.schema.validation", kmsg.StringPtr("true")
	rt.Configs = append(rt.Configs, rc)
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create validated: %+v %v", resp, err)
	}
	waitFor(t, 10*time.Second, "validation on at the topic's leader", func() bool {
		tp := brokers[follower-1].lookupTopic("validated")
		if tp == nil {
			return false
		}
		settings, _ := brokers[follower-1].produceSnapshot(tp)
		return settings.schemas != nil
	})
	// The follower's replica of _schemas-0 stops copying.
	if _, err := brokers[leader-1].InjectFault(Fault{APIKey: int16(kmsg.Fetch), Topic: schemasTopicName, ClientID: fmt.Sprintf("gregor-replica-%d", follower), Latency: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	// A fetch already waiting there may still bring the new record, but
	// not a high watermark past it: the follower's replica never serves it.
	replica := partitionOf(brokers[follower-1], schemasTopicName).log
	end := replica.LogEndOffset()
	second := register("b")
	if hw := replica.HighWatermark(); hw > end {
		t.Fatalf("the follower's replica of _schemas-0 has high watermark %d, past the new record at %d: not stalled", hw, end)
	}
	wire := func(id int) []byte { return []byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id), 'x'} }
	cl := newClient(t, addrs[follower-1], kgo.RecordRetries(0), kgo.DefaultProduceTopic("validated"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: wire(first)}, &kgo.Record{Value: wire(second)}).FirstErr(); err != nil {
		t.Fatalf("ids %d and %d (just registered) at broker %d, a follower of _schemas-0 led by %d: %v", first, second, follower, leader, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: wire(999)}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("an unregistered id: %v, want INVALID_RECORD", err)
	}
}
