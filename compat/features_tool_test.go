package compat

// Kafka's own kafka-features (org.apache.kafka.tools.FeatureCommand, from
// the Kafka 4.4 jars compat/kafkaref resolves) against Gregor: describe
// lists Gregor's supported ranges and finalized levels, upgrade --dry-run
// changes nothing, upgrade finalizes transaction.version 2 with the next
// epoch, a level above what Gregor supports and a metadata.version
// downgrade are refused with Kafka 4.4's messages, and the finalized
// levels survive a restart.

import (
	"regexp"
	"strings"
	"testing"
)

// featureLine matches one feature of `kafka-features describe`: name,
// finalized level and epoch.
var featureLine = regexp.MustCompile(`Feature: (\S+)\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: \S+\s+FinalizedVersionLevel: (\S+)\s+Epoch: (\d+)`)

func describeFeatures(t *testing.T, addr string) map[string][2]string {
	t.Helper()
	out := kafkaTool(t, "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", addr, "describe")
	m := map[string][2]string{}
	for _, l := range strings.Split(out, "\n") {
		if s := featureLine.FindStringSubmatch(l); s != nil {
			m[s[1]] = [2]string{s[2], s[3]}
		}
	}
	if len(m) != 7 {
		t.Fatalf("describe listed %d features:\n%s", len(m), out)
	}
	return m
}

func TestKafkaFeatures_DescribeUpgradeAndRestart(t *testing.T) {
	singleNodeOnly(t, "the features of one node")
	b := newBroker(t)
	const class = "org.apache.kafka.tools.FeatureCommand"
	before := describeFeatures(t, b.addr)
	if before["transaction.version"][0] != "0" || before["group.version"][0] != "1" || before["metadata.version"][0] != "4.4-IV2" {
		t.Fatalf("finalized levels at start: %v", before)
	}
	epoch := before["transaction.version"][1]

	out := kafkaTool(t, class, "--bootstrap-server", b.addr, "upgrade", "--feature", "transaction.version=2", "--dry-run")
	if strings.TrimSpace(out) != "transaction.version can be upgraded to 2." {
		t.Errorf("upgrade --dry-run printed %q", out)
	}
	if got := describeFeatures(t, b.addr)["transaction.version"]; got != [2]string{"0", epoch} {
		t.Errorf("after --dry-run: transaction.version %v, want level 0 in epoch %s", got, epoch)
	}
	out, _ = kafkaToolRun(t, class, "--bootstrap-server", b.addr, "upgrade", "--feature", "transaction.version=3")
	if want := "Could not upgrade transaction.version to 3. The update failed for all features since the following feature had an error: Invalid update version 3 for feature transaction.version. Local controller 0 only supports versions 0-2"; !strings.Contains(out, want) {
		t.Errorf("upgrade to 3 printed %q, want %q", out, want)
	}
	out, _ = kafkaToolRun(t, class, "--bootstrap-server", b.addr, "downgrade", "--feature", "metadata.version=20")
	if want := "Unsupported metadata.version downgrade from 33 to 20. Refusing to perform the requested downgrade because it might delete metadata information."; !strings.Contains(out, want) {
		t.Errorf("metadata.version downgrade printed %q, want %q", out, want)
	}
	out = kafkaTool(t, class, "--bootstrap-server", b.addr, "upgrade", "--feature", "transaction.version=2")
	if strings.TrimSpace(out) != "transaction.version was upgraded to 2." {
		t.Errorf("upgrade printed %q", out)
	}
	after := describeFeatures(t, b.addr)
	if after["transaction.version"][0] != "2" || after["transaction.version"][1] == epoch {
		t.Errorf("after the upgrade: transaction.version %v, want level 2 in an epoch after %s", after["transaction.version"], epoch)
	}
	b.restart(t)
	if got := describeFeatures(t, b.addr); got["transaction.version"] != after["transaction.version"] {
		t.Errorf("after a restart: transaction.version %v, want %v", got["transaction.version"], after["transaction.version"])
	}
}
