package compat

// Kafka 4.4's own kafka-cluster (org.apache.kafka.tools.ClusterTool) and
// kafka-metadata-quorum (MetadataQuorumCommand) administration commands,
// UnregisterBroker (64), UnregisterController (94), AddRaftVoter (80) and
// RemoveRaftVoter (81), against Gregor and against Apache Kafka 4.4:
//
//   - on one node, beside a single-node Kafka (a static quorum of itself):
//     `unregister` of an id never registered, `unregister-controller` of
//     another id and of the node itself, `remove-controller` and
//     `add-controller` (a controller formatted for the cluster, named in a
//     properties file as the tool asks) print the same on both and exit
//     with the same status;
//   - on three Gregor nodes: a broker killed with SIGKILL is listed as
//     fenced by `list-endpoints --include-fenced-brokers` (DescribeCluster
//     v2) once its session ends, `unregister --id 3` drops it ("Broker 3 is
//     no longer registered.") and it is listed no more; a live broker is
//     refused.

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

const (
	clusterToolClass = "org.apache.kafka.tools.ClusterTool"
	quorumToolClass  = "org.apache.kafka.tools.MetadataQuorumCommand"
)

// toolOutcome is a tool's output without the JVM's noise (SLF4J's
// warnings, stack frames) and its exit status.
func toolOutcome(t *testing.T, class string, args ...string) string {
	t.Helper()
	out, err := kafkaToolRun(t, class, args...)
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "SLF4J") || strings.HasPrefix(strings.TrimSpace(l), "at ") || strings.HasPrefix(l, "\t... ") {
			continue
		}
		keep = append(keep, l)
	}
	status := "exit 0"
	if err != nil {
		status = "exit " + err.Error()
	}
	return strings.Join(keep, "\n") + "\n[" + status + "]"
}

// controllerProps writes what `add-controller --command-config` reads: a
// controller's properties, with a formatted metadata log directory whose
// meta.properties names cluster, node 2 and a directory id, as
// kafka-storage format leaves it.
func controllerProps(t *testing.T, cluster string) string {
	dir := t.TempDir()
	meta := fmt.Sprintf("version=1\ncluster.id=%s\nnode.id=2\ndirectory.id=%s\n", cluster, base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef")))
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(t.TempDir(), "controller.properties")
	conf := fmt.Sprintf("process.roles=controller\nnode.id=2\ncontroller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:19093\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\nlog.dirs=%s\nmetadata.log.dir=%s\n", dir, dir)
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return props
}

func TestKafkaClusterAndQuorumTools_KRaftAsKafka(t *testing.T) {
	singleNodeOnly(t, "compared with a one-node Kafka")
	ctx := testCtx(t, 5*time.Minute)
	kafka := startKafkaSource(t, ctx)
	g := newBroker(t, "node.id=1")
	dirID := base64.RawURLEncoding.EncodeToString([]byte("fedcba9876543210"))
	outs := map[string][]string{}
	var names []string
	for _, side := range []struct{ name, addr string }{{"kafka", kafka.Addr}, {"gregor", g.addr}} {
		adm := kadm.NewClient(newAddrClient(t, side.addr))
		meta, err := adm.BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		props := controllerProps(t, meta.Cluster)
		cases := []struct {
			name  string
			class string
			args  []string
		}{
			{"unregister --id 5", clusterToolClass, []string{"unregister", "--bootstrap-server", side.addr, "--id", "5"}},
			{"unregister-controller --id 5", clusterToolClass, []string{"unregister-controller", "--bootstrap-server", side.addr, "--id", "5"}},
			{"unregister-controller --id 1", clusterToolClass, []string{"unregister-controller", "--bootstrap-server", side.addr, "--id", "1"}},
			{"remove-controller 1", quorumToolClass, []string{"--bootstrap-server", side.addr, "remove-controller", "--controller-id", "1", "--controller-directory-id", dirID}},
			{"remove-controller 2", quorumToolClass, []string{"--bootstrap-server", side.addr, "remove-controller", "--controller-id", "2", "--controller-directory-id", dirID}},
			{"add-controller", quorumToolClass, []string{"--bootstrap-server", side.addr, "--command-config", props, "add-controller"}},
		}
		names = names[:0]
		for _, c := range cases {
			names = append(names, c.name)
			outs[side.name] = append(outs[side.name], toolOutcome(t, c.class, c.args...))
		}
	}
	for i, name := range names {
		k, gr := outs["kafka"][i], outs["gregor"][i]
		t.Logf("%s:\n%s", name, gr)
		if k != gr {
			t.Errorf("%s differs:\nkafka:\n%s\ngregor:\n%s", name, k, gr)
		}
	}
}

// endpointsRE is a row's host and port in `list-endpoints`.
var endpointsRE = regexp.MustCompile(`127\.0\.0\.1\s+\d+`)

// endpointRows is `list-endpoints` with the columns' padding collapsed and
// each port replaced by <port>.
func endpointRows(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, endpointsRE.ReplaceAllString(strings.Join(strings.Fields(l), " "), "127.0.0.1 <port>"))
	}
	return strings.Join(lines, "\n")
}

// firstLine is a tool outcome's first line and its exit status.
func firstLine(out string) string {
	lines := strings.Split(out, "\n")
	return lines[0] + " " + lines[len(lines)-1]
}

func TestKafkaClusterTool_Unregister_Cluster(t *testing.T) {
	c := startCluster(t, 3)
	waitAllBrokers(c)
	seed := c.Node(1).Addr()
	check := func(what, got, want string) {
		t.Helper()
		t.Logf("%s:\n%s", what, got)
		if got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", what, got, want)
		}
	}
	endpoints := func() string {
		return endpointRows(toolOutcome(t, clusterToolClass, "list-endpoints", "--bootstrap-server", seed, "--include-fenced-brokers"))
	}
	const header = "ID HOST PORT RACK STATE ENDPOINT_TYPE\n"
	row := func(id int, state string) string {
		return fmt.Sprintf("%d 127.0.0.1 <port> null %s broker\n", id, state)
	}
	check("list-endpoints, three live", endpoints(), header+row(1, "unfenced")+row(2, "unfenced")+row(3, "unfenced")+"[exit 0]")
	check("unregister --id 1 (live)", firstLine(toolOutcome(t, clusterToolClass, "unregister", "--bootstrap-server", seed, "--id", "1")),
		"org.apache.kafka.common.errors.InvalidRequestException: Broker 1 is alive: Gregor unregisters a broker only after its session has ended; stop it first [exit exit status 1]")

	// The voters: 9 is none, the active controller cannot go, another voter
	// stays one (a static quorum), and the quorum's voters are fixed.
	ctrl, err := c.Controller()
	if err != nil {
		t.Fatal(err)
	}
	other := ctrl%3 + 1
	unregCtrl := func(id int32) string {
		return firstLine(toolOutcome(t, clusterToolClass, "unregister-controller", "--bootstrap-server", seed, "--id", fmt.Sprint(id)))
	}
	check("unregister-controller --id 9", unregCtrl(9),
		"org.apache.kafka.common.errors.ControllerIdNotRegisteredException: Controller ID 9 is not currently registered. [exit exit status 1]")
	check("unregister-controller of the active controller", unregCtrl(ctrl),
		"org.apache.kafka.common.errors.InvalidRequestException: Controller cannot unregister itself while it is active. [exit exit status 1]")
	check("unregister-controller of another voter", unregCtrl(other),
		fmt.Sprintf("org.apache.kafka.common.errors.InvalidRequestException: Controller %d is a voter of the static quorum (controller.quorum.voters): it stays registered while it is one. [exit exit status 1]", other))
	check("remove-controller", firstLine(toolOutcome(t, quorumToolClass, "--bootstrap-server", seed, "remove-controller", "--controller-id", fmt.Sprint(other),
		"--controller-directory-id", base64.RawURLEncoding.EncodeToString([]byte("fedcba9876543210")))),
		"org.apache.kafka.common.errors.UnsupportedVersionException: Cluster doesn't support removing voter because the kraft.version feature is 0 [exit exit status 1]")

	// A dead broker stays registered, fenced, until unregistered.
	c.Node(3).Kill()
	if err := waitUntil(30*time.Second, func() error {
		md, err := metadataFrom(seed)
		if err != nil {
			return err
		}
		if len(md.Brokers) != 2 {
			return fmt.Errorf("lists %d brokers", len(md.Brokers))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("list-endpoints, 3 killed", endpoints(), header+row(1, "unfenced")+row(2, "unfenced")+row(3, "fenced")+"[exit 0]")
	check("unregister --id 3", toolOutcome(t, clusterToolClass, "unregister", "--bootstrap-server", seed, "--id", "3"), "Broker 3 is no longer registered.\n[exit 0]")
	check("list-endpoints, 3 unregistered", endpoints(), header+row(1, "unfenced")+row(2, "unfenced")+"[exit 0]")
	check("unregister --id 3 again", firstLine(toolOutcome(t, clusterToolClass, "unregister", "--bootstrap-server", seed, "--id", "3")),
		"org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID 3 is not currently registered [exit exit status 1]")
	// Started again, it registers again.
	c.Node(3).Restart()
	waitAllBrokers(c)
	check("list-endpoints, 3 restarted", endpoints(), header+row(1, "unfenced")+row(2, "unfenced")+row(3, "unfenced")+"[exit 0]")
}
