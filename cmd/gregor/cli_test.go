package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/gregortest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// gregorBin is the binary under test, built by TestMain.
var gregorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gregor-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gregorBin = filepath.Join(dir, "gregor")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	out, err := exec.CommandContext(ctx, "go", "build", "-o", gregorBin, ".").CombinedOutput()
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build gregor: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the binary with args and stdin, bounded in time, returning
// stdout and stderr; it fails the test on a non-zero exit unless fail is
// expected.
func run(t *testing.T, stdin string, wantFail bool, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gregorBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if wantFail && err == nil {
		t.Fatalf("gregor %v succeeded, want failure\n%s", args, stdout.String())
	}
	if !wantFail && err != nil {
		t.Fatalf("gregor %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// columns reports whether out has a line whose whitespace-separated fields
// start with want.
func hasRow(out string, want ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(want) && slicesEqual(f[:len(want)], want) {
			return true
		}
	}
	return false
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCLI_Topics(t *testing.T) {
	b := gregortest.Start(t)
	br := "--brokers=" + b.Addr()
	out, _ := run(t, "", false, "topics", "create", "orders", "--partitions", "3", "--config", "retention.ms=60000", br)
	if !strings.Contains(out, "created topic orders with 3 partitions") {
		t.Fatalf("create: %s", out)
	}
	run(t, "", true, "topics", "create", "orders", br) // exists
	if out, _ := run(t, "", false, "topics", "create", "single", "--partitions", "1", br); !strings.Contains(out, "created topic single with 1 partition\n") {
		t.Fatalf("create one partition: %q", out)
	}
	_, errOut := run(t, "", true, "topics", "delete", "nosuch", br)
	if desc := "does not host this topic-partition"; strings.Count(errOut, desc) != 1 {
		t.Fatalf("delete of an unknown topic says %q other than once: %q", desc, errOut)
	}
	out, _ = run(t, "", false, "topics", "list", br)
	if !hasRow(out, "orders", "3", "1") {
		t.Fatalf("list:\n%s", out)
	}
	out, _ = run(t, "", false, "topics", "alter-config", "orders", "--set", "retention.ms=1000", "--set", "cleanup.policy=delete", br)
	if !strings.Contains(out, "altered configs of topic orders") {
		t.Fatalf("alter-config: %s", out)
	}
	out, _ = run(t, "", false, "topics", "describe", "orders", br)
	if !strings.Contains(out, "retention.ms=1000") || !hasRow(out, "2", "0", "[0]", "[0]", "0", "0", "0") {
		t.Fatalf("describe:\n%s", out)
	}
	// The topic id as Kafka's tools print it: 22 characters of URL-safe
	// base64, no padding.
	if !regexp.MustCompile(`\tID: [A-Za-z0-9_-]{22}\t`).MatchString(out) {
		t.Fatalf("describe: topic id not in Kafka's form:\n%s", out)
	}
	out, _ = run(t, "", false, "topics", "describe", "orders", br, "--format", "json")
	var described []struct {
		Topic      string
		ID         string
		Configs    map[string]string
		Partitions []struct {
			Partition    int32
			Leader       int32
			Replicas     []int32
			LogEndOffset int64 `json:"log_end_offset"`
		}
	}
	if err := json.Unmarshal([]byte(out), &described); err != nil || len(described) != 1 || described[0].Topic != "orders" ||
		len(described[0].ID) != 22 || described[0].Configs["retention.ms"] != "1000" || len(described[0].Partitions) != 3 ||
		described[0].Partitions[2].Partition != 2 || !slices.Equal(described[0].Partitions[2].Replicas, []int32{0}) {
		t.Fatalf("describe --format json (%v):\n%s", err, out)
	}
	out, _ = run(t, "", false, "topics", "list", br, "--format", "json")
	if !strings.Contains(out, `"topic": "orders"`) || !strings.Contains(out, `"partitions": 3`) {
		t.Fatalf("list --format json:\n%s", out)
	}
	run(t, "", true, "topics", "list", br, "--format", "yaml")
	out, _ = run(t, "", false, "topics", "delete", "orders", br)
	if !strings.Contains(out, "deleted topic orders") {
		t.Fatalf("delete: %s", out)
	}
	out, _ = run(t, "", false, "topics", "list", br)
	if strings.Contains(out, "orders") {
		t.Fatalf("orders still listed:\n%s", out)
	}
}

func TestCLI_ProduceConsume(t *testing.T) {
	b := gregortest.Start(t, gregortest.Topic("lines", 1, nil), gregortest.Topic("two", 2, nil))
	br := "--brokers=" + b.Addr()
	before := time.Now().UnixMilli()
	run(t, "a:1\nb:2\nc:3:x\nnokey\n", false, "produce", "lines", "--key-separator", ":", br)
	out, _ := run(t, "", false, "consume", "lines", "--from-beginning", "--until-end", "--format", `%o %k=%v\n`, br)
	if want := "0 a=1\n1 b=2\n2 c=3:x\n3 =nokey\n"; out != want {
		t.Fatalf("consume --from-beginning --until-end:\n%q, want %q", out, want)
	}
	out, _ = run(t, "", false, "consume", "lines", "--from-beginning", "-n", "2", br)
	if out != "1\n2\n" {
		t.Fatalf("consume -n 2: %q", out)
	}
	out, _ = run(t, "", false, "consume", "lines", "--offset", "2", "--until-end", "--format", `%v|%K\n`, br)
	if out != "3:x|63\nnokey|\n" {
		t.Fatalf("consume --offset 2: %q", out)
	}
	out, _ = run(t, "", false, "consume", "lines", "--timestamp", fmt.Sprint(before), "--until-end", "-n", "1", br)
	if out != "1\n" {
		t.Fatalf("consume --timestamp: %q", out)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out, _ = run(t, "", false, "consume", "lines", "--timestamp", future, "--until-end", br)
	if out != "" {
		t.Fatalf("consume from the future: %q", out)
	}
	// Two partitions, many lines: --until-end reads all of them.
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	run(t, in.String(), false, "produce", "two", "--key-separator=:", br)
	out, _ = run(t, "", false, "consume", "two", "--from-beginning", "--until-end", "--format", `%p %v\n`, br)
	if n := strings.Count(out, "\n"); n != 1000 {
		t.Fatalf("consumed %d of 1000 lines", n)
	}
	out, _ = run(t, "", false, "consume", "two", "--partition", "1", "--from-beginning", "--until-end", "--format", `%p\n`, br)
	if strings.Contains(out, "0\n") || out == "" {
		t.Fatalf("--partition 1 printed other partitions or nothing: %d lines", strings.Count(out, "\n"))
	}
	run(t, "", true, "consume", "nosuchtopic", "--until-end", "--from-beginning", br)

	// In a group, -n 5 commits the five records printed, not what was
	// fetched beyond them; the next run goes on from there.
	seen := map[string]bool{}
	for _, n := range []int{5, 3} {
		out, _ = run(t, "", false, "consume", "two", "--group", "cli-n", "--from-beginning", "-n", fmt.Sprint(n), "--format", `%p/%o\n`, br)
		lines := strings.Fields(out)
		if len(lines) != n {
			t.Fatalf("consume --group -n %d printed %d records: %q", n, len(lines), out)
		}
		for _, l := range lines {
			if seen[l] {
				t.Fatalf("record %s printed again by the group's next run", l)
			}
			seen[l] = true
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(testCtx(t), "cli-n")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != 8 {
		t.Fatalf("group cli-n committed %d records in all after -n 5 and -n 3, want 8 (%v)", committed, offs)
	}
}

func TestCLI_Groups(t *testing.T) {
	b := gregortest.Start(t, gregortest.Topic("gt", 2, nil))
	br := "--brokers=" + b.Addr()
	ctx := testCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Explicit create times: ten records, then four late ones 10 ms after,
	// with mid for --to-datetime between them.
	early := time.Now().Truncate(time.Millisecond)
	late := early.Add(10 * time.Millisecond)
	mid := early.Add(5 * time.Millisecond).UnixMilli()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "gt", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i)), Timestamp: early}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "gt", Partition: int32(i % 2), Value: []byte("late"), Timestamp: late}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "gt", Partition: 0, At: 2})
	offs.Add(kadm.Offset{Topic: "gt", Partition: 1, At: 1})
	if r, err := kadm.NewClient(cl).CommitOffsets(ctx, "cli-group", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	out, _ := run(t, "", false, "groups", "list", br)
	if !hasRow(out, "cli-group", "Empty") {
		t.Fatalf("list:\n%s", out)
	}
	out, _ = run(t, "", false, "groups", "describe", "cli-group", br)
	if !strings.Contains(out, "Total lag: 11") || !hasRow(out, "gt", "0", "2", "7", "5") || !hasRow(out, "gt", "1", "1", "7", "6") {
		t.Fatalf("describe:\n%s", out)
	}
	out, _ = run(t, "", false, "groups", "describe", "cli-group", br, "--format", "json")
	var groups []struct {
		Group    string
		State    string
		TotalLag int64 `json:"total_lag"`
		Offsets  []struct {
			Partition     int32
			CurrentOffset *int64 `json:"current_offset"`
			Lag           *int64
		}
	}
	if err := json.Unmarshal([]byte(out), &groups); err != nil || len(groups) != 1 || groups[0].State != "Empty" || groups[0].TotalLag != 11 ||
		len(groups[0].Offsets) != 2 || *groups[0].Offsets[1].CurrentOffset != 1 || *groups[0].Offsets[1].Lag != 6 {
		t.Fatalf("describe --format json (%v):\n%s", err, out)
	}
	if out, _ = run(t, "", false, "groups", "list", br, "--format", "json"); !strings.Contains(out, `"group": "cli-group"`) {
		t.Fatalf("groups list --format json:\n%s", out)
	}
	out, stderr := run(t, "", false, "groups", "reset-offsets", "cli-group", "--to-earliest", br)
	if !hasRow(out, "gt", "0", "0") || !strings.Contains(stderr, "dry run") {
		t.Fatalf("dry run:\n%s\n%s", out, stderr)
	}
	if c := b.Groups()[0].Offsets[0].Committed; c != 2 {
		t.Fatalf("dry run committed: offset %d", c)
	}
	run(t, "", false, "groups", "reset-offsets", "cli-group", "--to-earliest", "--execute", br)
	out, _ = run(t, "", false, "groups", "describe", "cli-group", br)
	if !strings.Contains(out, "Total lag: 14") || !hasRow(out, "gt", "0", "0", "7", "7") {
		t.Fatalf("after --to-earliest:\n%s", out)
	}
	run(t, "", false, "groups", "reset-offsets", "cli-group", "--to-datetime", fmt.Sprint(mid), "--execute", br)
	out, _ = run(t, "", false, "groups", "describe", "cli-group", br)
	if !hasRow(out, "gt", "0", "5", "7", "2") || !hasRow(out, "gt", "1", "5", "7", "2") {
		t.Fatalf("after --to-datetime:\n%s", out)
	}
	run(t, "", false, "groups", "reset-offsets", "cli-group", "--to-latest", "--topic", "gt", "--execute", br)
	out, _ = run(t, "", false, "groups", "describe", "cli-group", br)
	if !strings.Contains(out, "Total lag: 0") {
		t.Fatalf("after --to-latest:\n%s", out)
	}
	// The rest of kafka-consumer-groups' reset specs, each checked with
	// the committed offsets; an offset outside the log goes to its end.
	reset := func(want0, want1 string, spec ...string) {
		t.Helper()
		run(t, "", false, append(append([]string{"groups", "reset-offsets", "cli-group"}, spec...), "--execute", br)...)
		out, _ := run(t, "", false, "groups", "describe", "cli-group", br)
		if !hasRow(out, "gt", "0", want0) || !hasRow(out, "gt", "1", want1) {
			t.Fatalf("after %v, want %s and %s:\n%s", spec, want0, want1, out)
		}
	}
	reset("4", "4", "--shift-by", "-3")
	reset("7", "7", "--to-offset", "100")
	reset("0", "0", "--shift-by", "-100")
	offsetsFile := filepath.Join(t.TempDir(), "offsets.csv")
	if err := os.WriteFile(offsetsFile, []byte("gt,0,1\ngt,1,3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reset("1", "3", "--from-file", offsetsFile)
	reset("1", "3", "--to-current")
	reset("0", "0", "--by-duration", "PT1H")
	reset("7", "7", "--by-duration", "0s")
	// A group with a member is refused before any plan is printed.
	live, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("cli-group"), kgo.ConsumeTopics("gt"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	stable := testCtx(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for gs := b.Groups(); len(gs) != 1 || gs[0].State != "Stable"; gs = b.Groups() {
		select {
		case <-stable.Done():
			t.Fatalf("cli-group not Stable with its member: %+v", gs)
		case <-tick.C:
		}
	}
	out, stderr = run(t, "", true, "groups", "reset-offsets", "cli-group", "--to-earliest", br)
	if out != "" || !strings.Contains(stderr, "assignments can only be reset if the group 'cli-group' is inactive, but the current state is Stable") {
		t.Fatalf("active group: stdout %q, stderr %q", out, stderr)
	}
	live.Close()
	out, _ = run(t, "", false, "groups", "delete", "cli-group", br)
	if !strings.Contains(out, "deleted group cli-group") {
		t.Fatalf("delete: %s", out)
	}
	out, _ = run(t, "", false, "groups", "list", br)
	if strings.Contains(out, "cli-group") {
		t.Fatalf("still listed:\n%s", out)
	}
}

var (
	listenRe = regexp.MustCompile(`msg=listening addr=(\S+)`)
	httpRe   = regexp.MustCompile(`msg="admin http listening" addr=(\S+)`)
)

// TestBinary_StartToReadyAndHealthcheck starts `gregor serve` with --http,
// measures start to ready (exec until a client's ApiVersions is
// answered), checks `gregor healthcheck` and the metrics endpoint, and
// that SIGTERM stops it.
func TestBinary_StartToReadyAndHealthcheck(t *testing.T) {
	const runs = 3
	var total, worst time.Duration
	for i := range runs {
		d := startBinaryOnce(t, i == 0)
		total += d
		worst = max(worst, d)
	}
	t.Logf("binary start to ready (exec until ApiVersions answered): mean %v, worst %v over %d runs", total/runs, worst, runs)
}

func startBinaryOnce(t *testing.T, checks bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, gregorBin, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "GREGOR_ADVERTISE=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var addr, httpAddr string
	sc := bufio.NewScanner(stderr)
	for (addr == "" || httpAddr == "") && sc.Scan() {
		if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
		if m := httpRe.FindStringSubmatch(sc.Text()); m != nil {
			httpAddr = m[1]
		}
	}
	if addr == "" || httpAddr == "" {
		t.Fatalf("no listening lines (addr %q, http %q)", addr, httpAddr)
	}
	go io.Copy(io.Discard, stderr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(t0)
	if checks {
		out, _ := run(t, "", false, "healthcheck", "--http", httpAddr)
		if out != "ready\n" {
			t.Fatalf("healthcheck: %q", out)
		}
		run(t, "", false, "healthcheck", "--http", httpAddr, "--path", "/metrics")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gregor serve exited with %v after SIGTERM", err)
	}
	if checks {
		run(t, "", true, "healthcheck", "--http", httpAddr, "--timeout", "2s")
	}
	return ready
}

func TestCLI_UsageErrors(t *testing.T) {
	_, stderr := run(t, "", true, "topics")
	if !strings.Contains(stderr, "usage: gregor topics") {
		t.Fatalf("topics usage: %s", stderr)
	}
	_, stderr = run(t, "", true, "groups", "reset-offsets", "g", "--brokers", "127.0.0.1:1")
	if !strings.Contains(stderr, "exactly one of --to-earliest") {
		t.Fatalf("reset-offsets usage: %s", stderr)
	}
	run(t, "", true, "consume", "--brokers", "127.0.0.1:1")
}

// TestCLI_UsersAddOffline: `gregor users add` writes a SCRAM credential
// (never the password) into a data directory no broker has used yet, and
// the broker started on it authenticates that user.
func TestCLI_UsersAddOffline(t *testing.T) {
	dir := t.TempDir()
	run(t, "", false, "users", "add", "alice", "--password", "s3cret-pw", "--mechanism", "SCRAM-SHA-512", "--data-dir", dir)
	run(t, "", true, "users", "add", "bob", "--data-dir", dir)                                                  // no password
	run(t, "", true, "users", "add", "bob", "--password", "x", "--mechanism", "SCRAM-SHA-1", "--data-dir", dir) // unknown mechanism
	raw, err := os.ReadFile(filepath.Join(dir, "__meta", "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "s3cret-pw") || !strings.Contains(string(raw), "SCRAM-SHA-512") {
		t.Fatalf("users file: %s", raw)
	}
	b, err := broker.New(broker.Config{DataDir: dir, Props: map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr, err := b.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr.String()), kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret-pw"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("alice cannot authenticate: %v", err)
	}
	// The CLI reaches it with Kafka's client properties (--command-config).
	props := func(pw string) string {
		p := filepath.Join(t.TempDir(), "client.properties")
		body := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="` + pw + `";` + "\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	br := "--brokers=" + addr.String()
	if out, _ := run(t, "", false, "topics", "create", "secured", br, "--command-config", props("s3cret-pw")); !strings.Contains(out, "created topic secured") {
		t.Fatalf("create through SASL: %s", out)
	}
	if out, _ := run(t, "", false, "topics", "list", br, "--command-config", props("s3cret-pw")); !hasRow(out, "secured", "1") {
		t.Fatalf("list through SASL:\n%s", out)
	}
	_, stderr := run(t, "", true, "topics", "list", br, "--command-config", props("wrong"), "--timeout", "5s")
	if !strings.Contains(stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("a wrong password: %s", stderr)
	}
	// gregor link sends Gregor's own requests on a connection of its own:
	// it authenticates there too.
	run(t, "", false, "link", "list", br, "--command-config", props("s3cret-pw"))
	_, stderr = run(t, "", true, "link", "list", br, "--command-config", props("wrong"), "--timeout", "5s")
	if !strings.Contains(stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("gregor link with a wrong password: %s", stderr)
	}
	if _, stderr = run(t, "", true, "link", "list", br, "--timeout", "5s"); !strings.Contains(stderr, "closed the connection") {
		t.Fatalf("gregor link without SASL: %s", stderr)
	}
}

// TestCLI_HelpAndVersion: help, in every spelling, lists the commands and
// the serve flags on standard output and exits 0, as does a command's
// --help; version prints the version; a command without its arguments
// still fails with its usage.
func TestCLI_HelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		out, _ := run(t, "", false, args...)
		for _, want := range []string{"Commands:", "  topics ", "  version ", "-listen", "-data-dir"} {
			if !strings.Contains(out, want) {
				t.Errorf("gregor %v: no %q in\n%s", args, want, out)
			}
		}
	}
	_, errOut := run(t, "", false, "serve", "--help")
	if !strings.Contains(errOut, "Commands:") {
		t.Errorf("gregor serve --help: %s", errOut)
	}
	if out, _ := run(t, "", false, "topics", "--help"); !strings.Contains(out, "usage: gregor topics") {
		t.Errorf("gregor topics --help: %s", out)
	}
	run(t, "", false, "consume", "--help")
	run(t, "", false, "users", "help")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out, _ := run(t, "", false, args...); !strings.HasPrefix(out, "gregor ") || !strings.Contains(out, "go1.") {
			t.Errorf("gregor %v: %q", args, out)
		}
	}
	run(t, "", true, "topics")
	run(t, "", true, "--no-such-flag")
}

// TestCLI_Completion: the bash completion script completes commands,
// actions, and flags read from the command's own --help.
func TestCLI_Completion(t *testing.T) {
	script, _ := run(t, "", false, "completion", "bash")
	path := filepath.Join(t.TempDir(), "gregor.bash")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	probe := `source "$1"; shift
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _gregor; echo "${COMPREPLY[*]}"; }
t "$GREGOR" to; t "$GREGOR" topics d; t "$GREGOR" groups reset-offsets --to-c; t "$GREGOR" link p`
	cmd := exec.Command("bash", "-c", probe, "bash", path)
	cmd.Env = append(os.Environ(), "GREGOR="+gregorBin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "topics\ndescribe delete\n--to-current\npromote\n"; string(out) != want {
		t.Fatalf("completions:\n%s\nwant:\n%s", out, want)
	}
	run(t, "", true, "completion", "fish")
}
