package compat

// KIP-714 with Kafka 4.4's own tools: kafka-client-metrics
// (org.apache.kafka.tools.ClientMetricsCommand) creates, describes, lists
// and refuses subscriptions as against Kafka 4.4, and a real Java producer
// (kafka-producer-perf-test, org.apache.kafka.tools.ProducerPerformance,
// with enable.metrics.push, the default) pushes its metrics, which appear
// on the admin listener's /metrics.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestKafkaClientMetrics_ToolAndJavaProducer(t *testing.T) {
	singleNodeOnly(t, "starts its own broker with an admin listener")
	addr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	cmd := exec.Command(gregorBin, "--listen", addr, "--http", admin, "--data-dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gregor does not listen on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	const cm = "org.apache.kafka.tools.ClientMetricsCommand"
	if out := kafkaTool(t, cm, "--bootstrap-server", addr, "--alter", "--name", "prod", "--metrics", "org.apache.kafka.producer.", "--interval", "1000"); !strings.Contains(out, "Altered client metrics config for prod.") {
		t.Fatalf("--alter: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--alter", "--name", "bad", "--metrics", "x", "--interval", "50"}, "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{[]string{"--alter", "--name", "bad", "--match", "foo=bar"}, "Illegal client matching pattern: foo=bar"},
	} {
		out, err := kafkaToolRun(t, cm, append([]string{"--bootstrap-server", addr}, c.args...)...)
		if err == nil || !strings.Contains(out, "Error while executing client metrics command : "+c.want) {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
	}
	if out := kafkaTool(t, cm, "--bootstrap-server", addr, "--describe", "--name", "prod"); !strings.Contains(out, "Client metrics configs for prod are:\n  interval.ms=1000\n  match=\n  metrics=org.apache.kafka.producer.") {
		t.Fatalf("--describe: %q", out)
	}
	if out := kafkaTool(t, cm, "--bootstrap-server", addr, "--list"); strings.TrimSpace(out) != "prod" {
		t.Fatalf("--list: %q", out)
	}
	out := kafkaTool(t, "org.apache.kafka.tools.ProducerPerformance", "--topic", "telemetry", "--num-records", "200", "--record-size", "100",
		"--throughput", "50", "--command-property", "bootstrap.servers="+addr, "enable.metrics.push=true")
	if !strings.Contains(out, "200 records sent") {
		t.Fatalf("producer: %s", out)
	}
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var series []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "org_apache_kafka_producer_") && strings.Contains(l, `client_instance_id="`) {
			series = append(series, l)
		}
	}
	if len(series) < 10 || !strings.Contains(string(body), "org_apache_kafka_producer_record_send_total{") {
		t.Fatalf("/metrics has %d producer series:\n%s", len(series), strings.Join(series, "\n"))
	}
}
