package compat

// Kafka's own kafka-metadata-quorum (org.apache.kafka.tools.
// MetadataQuorumCommand, from the Kafka 4.4 jars compat/kafkaref
// resolves) against Gregor: `describe --status` and `describe
// --replication` print the lines and table they print against Kafka 4.4
// (for a single KRaft node: LeaderId 1, LeaderEpoch 1, one voter with
// endpoint CONTROLLER://…, CurrentObservers [], and a replication table
// with one Leader row; for three: three rows, the leader first).

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// kafkaTool runs one of Kafka's tools (a main class of the Kafka 4.4
// classpath) with the JVM's logging off, and returns its stdout; a tool
// that fails fails t. Without java and mvn it skips.
func kafkaTool(t *testing.T, class string, args ...string) string {
	t.Helper()
	out, err := kafkaToolRun(t, class, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", class, strings.Join(args, " "), err, out)
	}
	return out
}

// kafkaToolRun is kafkaTool that returns the tool's error (and combined
// output) instead of failing.
func kafkaToolRun(t *testing.T, class string, args ...string) (string, error) {
	t.Helper()
	if err := kafkaref.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cp, err := kafkaref.Classpath(ctx)
	if err != nil {
		t.Skipf("Kafka's classpath: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", append([]string{"-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", cp, class}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// quorumStatus parses `describe --status` into its fields.
func quorumStatus(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && !strings.HasPrefix(k, " ") {
			m[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("describe --status printed no %s line:\n%s", k, out)
		}
	}
	return m
}

// replicationRowRE is one row of `describe --replication`: NodeId,
// DirectoryId (the zero uuid, base64), LogEndOffset, Lag,
// LastFetchTimestamp, LastCaughtUpTimestamp, Status.
var replicationRowRE = regexp.MustCompile(`^(\d+)\s+AAAAAAAAAAAAAAAAAAAAAA\s+(\d+)\s+(\d+)\s+(-?\d+)\s+(-?\d+)\s+(Leader|Follower|Observer)\s*$`)

func quorumReplication(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !regexp.MustCompile(`^NodeId\s+DirectoryId\s+LogEndOffset\s+Lag\s+LastFetchTimestamp\s+LastCaughtUpTimestamp\s+Status\s*$`).MatchString(lines[0]) {
		t.Fatalf("describe --replication printed:\n%s", out)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		m := replicationRowRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("describe --replication row %q does not look like Kafka's:\n%s", l, out)
		}
		rows = append(rows, m[1:])
	}
	return rows
}

func TestKafkaMetadataQuorum_SingleNode(t *testing.T) {
	singleNodeOnly(t, "a single node answers as a single-node KRaft combined broker")
	b := newBroker(t)
	const class = "org.apache.kafka.tools.MetadataQuorumCommand"
	st := quorumStatus(t, kafkaTool(t, class, "--bootstrap-server", b.addr, "describe", "--status"))
	if st["LeaderId"] != "0" || st["LeaderEpoch"] != "1" || st["MaxFollowerLag"] != "0" || st["MaxFollowerLagTimeMs"] != "0" || st["CurrentObservers"] != "[]" {
		t.Fatalf("describe --status: %v", st)
	}
	if want := fmt.Sprintf(`[{"id": 0, "endpoints": ["CONTROLLER://%s"]}]`, b.addr); st["CurrentVoters"] != want {
		t.Fatalf("CurrentVoters: %s, want %s", st["CurrentVoters"], want)
	}
	rows := quorumReplication(t, kafkaTool(t, class, "--bootstrap-server", b.addr, "describe", "--replication"))
	if len(rows) != 1 || rows[0][0] != "0" || rows[0][1] != st["HighWatermark"] || rows[0][2] != "0" || rows[0][5] != "Leader" {
		t.Fatalf("describe --replication rows %v (high watermark %s)", rows, st["HighWatermark"])
	}
}

func TestKafkaMetadataQuorum_Cluster(t *testing.T) {
	c := startCluster(t, 3)
	waitAllBrokers(c)
	const class = "org.apache.kafka.tools.MetadataQuorumCommand"
	var leader string
	for _, seed := range c.Seeds() {
		st := quorumStatus(t, kafkaTool(t, class, "--bootstrap-server", seed, "describe", "--status"))
		if leader != "" && st["LeaderId"] != leader {
			t.Fatalf("%s: LeaderId %s, another node said %s", seed, st["LeaderId"], leader)
		}
		leader = st["LeaderId"]
		if !regexp.MustCompile(`^\[\{"id": 1, "endpoints": \["CONTROLLER://127\.0\.0\.1:\d+"\]\}, \{"id": 2, .*\{"id": 3, .*\]$`).MatchString(st["CurrentVoters"]) || st["CurrentObservers"] != "[]" {
			t.Fatalf("%s: voters %s observers %s", seed, st["CurrentVoters"], st["CurrentObservers"])
		}
		rows := quorumReplication(t, kafkaTool(t, class, "--bootstrap-server", seed, "describe", "--replication"))
		if len(rows) != 3 || rows[0][0] != leader || rows[0][5] != "Leader" || rows[1][5] != "Follower" || rows[2][5] != "Follower" {
			t.Fatalf("%s: describe --replication rows %v, leader %s", seed, rows, leader)
		}
		for _, r := range rows {
			if r[1] == "0" || r[3] == "-1" {
				t.Errorf("%s: row %v: the leader's broker answers (forwarded), so every voter's log end and last fetch are known", seed, r)
			}
		}
	}
}
