package broker

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func freeTCPPorts(t *testing.T, n int) []int {
	// Below the kernel's ephemeral range (ip_local_port_range, 32768-60999
	// by default): a port found free there can be taken, between this
	// check and the etcd member binding it, as the local port of any
	// process's outgoing connection (the compat suite runs beside these
	// tests), and the cluster then never gets its quorum. Each package
	// that starts etcd members draws from its own band (broker 20000-24999,
	// cluster 25000-28999, compat 29000-32767) so they do not race each
	// other either.
	var ports []int
	var lns []net.Listener
	for len(ports) < n {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(5000)))
		if err != nil {
			continue // taken: try another
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startEtcdBrokers starts n brokers over an embedded etcd, node ids 1 to
// n, every one of them a voter, and waits until each sees all n. props(i,
// dir), if not nil, adds to broker i+1's properties; dir is its data dir.
// It returns the brokers, the address each Listen returned, and stop[i],
// which closes broker i+1 (once; the test's end closes the others).
func startEtcdBrokers(t *testing.T, n int, props func(i int, dir string) map[string]string) (brokers []*Broker, addrs []string, stop []func()) {
	t.Helper()
	ports := freeTCPPorts(t, n)
	var voters []string
	for i, port := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, port))
	}
	brokers, addrs, stop = make([]*Broker, n), make([]string, n), make([]func(), n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dir := t.TempDir()
		p := map[string]string{
			"node.id":                   fmt.Sprint(i + 1),
			"controller.quorum.voters":  strings.Join(voters, ","),
			"broker.session.timeout.ms": "3000",
		}
		if props != nil {
			maps.Copy(p, props(i, dir))
		}
		b, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger(), Props: p, JoinCluster: joinEtcd})
		if err != nil {
			t.Fatal(err)
		}
		brokers[i] = b
		stop[i] = sync.OnceFunc(func() { b.Close() })
		t.Cleanup(stop[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr, err := b.Listen()
			if errs[i] = err; err == nil {
				addrs[i] = addr.String()
				go b.Serve()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("%d brokers in every broker's metadata", n), func() bool {
		for _, b := range brokers {
			if bs, _ := b.brokersView(); len(bs) != n {
				return false
			}
		}
		return true
	})
	return brokers, addrs, stop
}

// A two-broker cluster whose brokers talk to each other over SASL_SSL
// with SCRAM-SHA-512 (inter.broker.listener.name) while clients use a
// PLAINTEXT listener: an acks=all produce to a partition with two
// replicas succeeds only if the follower's fetcher authenticated, and
// Metadata through each listener lists that listener's addresses of both
// brokers (registered in etcd).
func TestCluster_InterBrokerSASLSSL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	pki := newTestPKI(t)
	ks, _ := pki.keystore(t, "server", "localhost")
	brokers, _, _ := startEtcdBrokers(t, 2, func(i int, dir string) map[string]string {
		if i == 0 {
			if err := AddUser(dir, "broker", config.ScramSHA512, "broker-secret", 0); err != nil {
				t.Fatal(err)
			}
		}
		return map[string]string{
			"listeners":                                             "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
			"listener.security.protocol.map":                        "INTERNAL:SASL_SSL,EXTERNAL:PLAINTEXT",
			"inter.broker.listener.name":                            "INTERNAL",
			"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
			"listener.name.internal.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
			"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
			"ssl.keystore.location":                                 ks,
			"ssl.truststore.location":                               pki.caPath,
			"replica.fetch.wait.max.ms":                             "100",
			"log.dirs":                                              filepath.Join(dir),
		}
	})
	ext := brokers[0].ListenerAddr("EXTERNAL").String()
	cl := newClient(t, ext, kgo.DefaultProduceTopic("replicated"), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	m, _ := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	for _, mb := range m.Brokers {
		want := brokers[mb.NodeID-1].ListenerAddr("EXTERNAL").String()
		if got := net.JoinHostPort(mb.Host, fmt.Sprint(mb.Port)); got != want {
			t.Errorf("broker %d listed at %s, want its EXTERNAL %s", mb.NodeID, got, want)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "replicated"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the follower in the ISR", func() bool {
		td, err := adm.ListTopics(ctx, "replicated")
		if err != nil {
			return false
		}
		p := td["replicated"].Partitions[0]
		return len(p.ISR) == 2
	})
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
	// The inter-broker listener itself needs SCRAM.
	internal := brokers[1].ListenerAddr("INTERNAL").String()
	good := kgo.SASL(scram.Auth{User: "broker", Pass: "broker-secret"}.AsSha512Mechanism())
	if err := pingErr(t, internal, good, kgo.DialTLSConfig(pki.clientTLS())); err != nil {
		t.Fatalf("INTERNAL with the broker's credentials: %v", err)
	}
	if err := pingErr(t, internal, kgo.DialTLSConfig(pki.clientTLS())); err == nil {
		t.Fatal("INTERNAL let a client in without SASL")
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("GREGOR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// In a cluster the ACLs live in etcd: a binding created through broker 1
// is enforced by broker 2, and a deny there too, with no restart.
func TestCluster_ACLsInEtcdEnforcedByEveryBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, _, _ := startEtcdBrokers(t, 2, func(i int, dir string) map[string]string {
		if i == 0 {
			for _, u := range []string{"admin", "bob"} {
				if err := AddUser(dir, u, config.ScramSHA256, u+"-pw", 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		return map[string]string{
			"listeners":                      "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
			"inter.broker.listener.name":     "INTERNAL",
			"sasl.enabled.mechanisms":        "PLAIN",
			"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":                    "User:admin;User:ANONYMOUS",
		}
	})
	ext := func(i int) string { return brokers[i].ListenerAddr("EXTERNAL").String() }
	admin1 := userClient(t, ext(0), "admin")
	if _, err := kadm.NewClient(admin1).CreateTopic(testCtx(t), 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	// bob talks to broker 2 only.
	bob2 := userClient(t, ext(1), "bob")
	describeConfigs := func() int16 {
		t.Helper()
		resp, err := bob2.Broker(2).Request(testCtx(t), describeConfigsReq(kmsg.ConfigResourceTypeTopic, "orders"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
	}
	waitFor(t, 30*time.Second, "broker 2 knows orders", func() bool { return brokers[1].lookupTopic("orders") != nil })
	if c := describeConfigs(); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob before any ACL: %v", kerr.ErrorForCode(c))
	}
	createACL(t, admin1, acl.Topic, "ord", acl.Prefixed, "User:bob", acl.DescribeConfigs, acl.Allow)
	// CreateAcls answers once broker 1 applied the etcd revision; broker 2
	// applies it from its own watch.
	waitFor(t, 30*time.Second, "broker 2 enforcing the ACL made through broker 1", func() bool { return describeConfigs() == 0 })
	admin2 := userClient(t, ext(1), "admin")
	if rs := describeAll(t, admin2); len(rs) != 1 || rs[0].ResourceName != "ord" {
		t.Fatalf("DescribeAcls through broker 2: %+v", rs)
	}
	// A DENY made through broker 2 is enforced by broker 1.
	createACL(t, admin2, acl.Topic, "orders", acl.Literal, "User:bob", acl.All, acl.Deny)
	bob1 := userClient(t, ext(0), "bob")
	waitFor(t, 30*time.Second, "broker 1 enforcing the DENY made through broker 2", func() bool {
		resp, err := bob1.Broker(1).Request(testCtx(t), describeConfigsReq(kmsg.ConfigResourceTypeTopic, "orders"))
		return err == nil && resp.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode == kerr.TopicAuthorizationFailed.Code
	})
}

// TestCluster_UsersInEtcdSeenByEveryBroker: a user created through one
// broker with AlterUserScramCredentials authenticates on the other as soon
// as its metadata watch delivers the change, and a user deleted through
// the other is refused by the first; users added offline to one node's
// users.json before the cluster's first start are copied into etcd.
func TestCluster_UsersInEtcdSeenByEveryBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	brokers, _, _ := startEtcdBrokers(t, 2, func(i int, dir string) map[string]string {
		if i == 0 {
			if err := AddUser(dir, "admin", config.ScramSHA256, "admin-pw", 0); err != nil {
				t.Fatal(err)
			}
		}
		return map[string]string{
			"listeners":                      "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
			"inter.broker.listener.name":     "INTERNAL",
			"sasl.enabled.mechanisms":        "PLAIN",
		}
	})
	ext := func(i int) string { return brokers[i].ListenerAddr("EXTERNAL").String() }
	authenticates := func(i int, user string) bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ext(i)), kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism()),
			kgo.RetryTimeout(time.Second), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
		defer cancel()
		_, err = cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
		return err == nil
	}
	waitFor(t, 30*time.Second, "broker 2 authenticating admin, seeded from broker 1's users.json", func() bool { return authenticates(1, "admin") })

	alter := func(i int, req *kmsg.AlterUserSCRAMCredentialsRequest) {
		t.Helper()
		cl := userClient(t, ext(i), "admin")
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Results[0]; r.ErrorCode != 0 {
			t.Fatalf("AlterUserScramCredentials through broker %d: %v", i+1, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	up := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = "carol", authn.MechanismByte(config.ScramSHA256), 4096, []byte("carol-salt")
	salted, err := pbkdf2.Key(sha256.New, "carol-pw", u.Salt, 4096, sha256.Size) // as a client derives it
	if err != nil {
		t.Fatal(err)
	}
	u.SaltedPassword = salted
	up.Upsertions = append(up.Upsertions, u)
	alter(0, up)
	waitFor(t, 30*time.Second, "broker 2 authenticating carol, created through broker 1", func() bool { return authenticates(1, "carol") })

	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "carol", authn.MechanismByte(config.ScramSHA256)
	del.Deletions = append(del.Deletions, d)
	alter(1, del)
	waitFor(t, 30*time.Second, "broker 1 refusing carol, deleted through broker 2", func() bool { return !authenticates(0, "carol") })
}
