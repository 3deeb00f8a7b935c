package broker

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSplitControllerListener(t *testing.T) {
	specs := func(s string) []listenerSpec {
		t.Helper()
		l, err := parseListenerList(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	voters := "1@127.0.0.1:9093"
	for _, tc := range []struct {
		name      string
		props     map[string]string
		listeners string
		kafka     []string // names left as Kafka listeners
		ctrl      string   // host:port of the controller listener, "" for none
		bad       bool
	}{
		{"default name", map[string]string{"controller.quorum.voters": voters}, "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19093", []string{"PLAINTEXT"}, "127.0.0.1:19093", false},
		{"named", map[string]string{"controller.quorum.voters": voters, "controller.listener.names": "raft, other"}, "PLAINTEXT://:9092,RAFT://:19093,CONTROLLER://:9094", []string{"PLAINTEXT", "CONTROLLER"}, ":19093", false},
		{"mapped PLAINTEXT", map[string]string{"controller.quorum.voters": voters, "listener.security.protocol.map": "CONTROLLER:PLAINTEXT"}, "PLAINTEXT://:9092,CONTROLLER://:19093", []string{"PLAINTEXT"}, ":19093", false},
		{"none", map[string]string{"controller.quorum.voters": voters}, "PLAINTEXT://:9092,SSL://:9093", []string{"PLAINTEXT", "SSL"}, "", false},
		// Without embedded etcd nothing changes: CONTROLLER is an ordinary
		// listener name (and needs a protocol mapping, checked later).
		{"single node", map[string]string{}, "PLAINTEXT://:9092,CONTROLLER://:19093", []string{"PLAINTEXT", "CONTROLLER"}, "", false},
		{"external etcd", map[string]string{"etcd.endpoints": "http://127.0.0.1:2379"}, "PLAINTEXT://:9092,CONTROLLER://:19093", []string{"PLAINTEXT", "CONTROLLER"}, "", false},
		{"TLS", map[string]string{"controller.quorum.voters": voters, "listener.security.protocol.map": "CONTROLLER:SSL"}, "PLAINTEXT://:9092,CONTROLLER://:19093", nil, "", true},
		{"port 0", map[string]string{"controller.quorum.voters": voters}, "PLAINTEXT://:9092,CONTROLLER://127.0.0.1:0", nil, "", true},
		{"two", map[string]string{"controller.quorum.voters": voters, "controller.listener.names": "A,B"}, "PLAINTEXT://:9092,A://:1,B://:2", nil, "", true},
	} {
		pm, err := protocolMap(tc.props["listener.security.protocol.map"])
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		kafka, ctrl, err := splitControllerListener(tc.props, pm, specs(tc.listeners))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var names []string
		for _, s := range kafka {
			names = append(names, s.name)
		}
		got := ""
		if ctrl != nil {
			got = net.JoinHostPort(ctrl.host, ctrl.port)
		}
		if !slices.Equal(names, tc.kafka) || got != tc.ctrl {
			t.Errorf("%s: Kafka listeners %v, controller %q; want %v, %q", tc.name, names, got, tc.kafka, tc.ctrl)
		}
	}
}

// A voter whose listeners include CONTROLLER binds its etcd member's peer
// port there and serves no Kafka on it; the address in
// controller.quorum.voters (advertised to the peers) stays unbound by the
// broker. One voter, so the member needs no peer to reach it.
func TestCluster_ControllerListenerBindsEtcdPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd")
	}
	ports := freeTCPPorts(t, 2)
	voter, ctrl := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	brokers, addrs, _ := startEtcdBrokers(t, 1, func(int, string) map[string]string {
		return map[string]string{
			"controller.quorum.voters":       "1@" + voter,
			"listeners":                      "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctrl,
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
			"advertised.listeners":           "CONTROLLER://" + voter, // ignored: the voters give it
		}
	})
	b := brokers[0]
	if got := b.Listeners(); !slices.Equal(got, []string{"PLAINTEXT"}) {
		t.Fatalf("Kafka listeners %v, want [PLAINTEXT]", got)
	}
	if b.ListenerAddr("CONTROLLER") != nil {
		t.Fatal("CONTROLLER is a Kafka listener")
	}
	c, err := net.DialTimeout("tcp", ctrl, 2*time.Second)
	if err != nil {
		t.Fatalf("nothing listens on the controller listener %s: %v", ctrl, err)
	}
	c.Close()
	if ln, err := net.Listen("tcp", voter); err != nil {
		t.Fatalf("the voter address %s is bound: %v", voter, err)
	} else {
		ln.Close()
	}
	// The member works: a topic is created and written through etcd's
	// metadata.
	cl := newClient(t, addrs[0], kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	waitFor(t, 30*time.Second, "a produce to t", func() bool {
		return cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr() == nil
	})
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "1", []string{"listeners"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if rs := resp.Resources; len(rs) != 1 || len(rs[0].Configs) != 1 || *rs[0].Configs[0].Value != fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://%s", "127.0.0.1:0", ctrl) {
		t.Fatalf("DescribeConfigs listeners: %+v", rs)
	}
}
