package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timeouts used by the harness. Tests bound their own work with contexts.
const (
	listenTimeout   = 20 * time.Second // start to the msg=listening line
	readyTimeout    = 10 * time.Second // listening line to a successful ApiVersions
	shutdownTimeout = 15 * time.Second // SIGTERM to exit, before SIGKILL
	buildTimeout    = 5 * time.Minute
)

var (
	// gregorBin is the broker binary every test starts; built by TestMain
	// unless GREGOR_BIN names one.
	gregorBin string
	// moduleRoot is the directory holding Gregor's go.mod.
	moduleRoot string
	// goTool is the go command used to build the broker and to run
	// franz-go's integration tests.
	goTool string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if goTool, err = exec.LookPath("go"); err != nil {
		fmt.Fprintln(os.Stderr, "compat: go tool not found:", err)
		return 1
	}
	if moduleRoot, err = findModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		return 1
	}
	if bin := os.Getenv("GREGOR_BIN"); bin != "" {
		gregorBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "gregor-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	gregorBin = filepath.Join(dir, "gregor")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	build := exec.CommandContext(ctx, goTool, "build", "-o", gregorBin, "./cmd/gregor")
	build.Dir = moduleRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "compat: go build ./cmd/gregor failed: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// findModuleRoot returns the directory of the main module's go.mod.
func findModuleRoot() (string, error) {
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

// broker is one Gregor process (and its successors after restarts) serving a
// fixed data directory; in cluster mode (see clusterMode) it is a three-node
// cluster instead.
type broker struct {
	dataDir string
	sets    []string

	// addr is the host:port from the latest msg=listening line; it
	// changes on every (re)start because the broker listens on port 0.
	// In cluster mode it is node 1's (proxy) address, fixed.
	addr string

	// cluster is the three nodes behind this broker in cluster mode, nil
	// otherwise; seeds lists their addresses (addr first).
	cluster *cluster
	seeds   []string

	runs    int
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // valid once exited is closed

	logMu sync.Mutex
	logs  []string
}

// startBroker launches the broker on 127.0.0.1:0 with dataDir and the given
// key=value properties, waits until it answers ApiVersions, and registers a
// cleanup that shuts it down gracefully. The broker's stderr is logged
// through t.Log if the test fails.
func startBroker(t *testing.T, dataDir string, sets ...string) *broker {
	t.Helper()
	b := &broker{dataDir: dataDir, sets: sets}
	t.Cleanup(func() {
		if b.running() {
			b.stop(t)
		}
		if t.Failed() {
			b.dumpLogs(t)
		}
	})
	b.start(t)
	return b
}

// newBroker starts a broker on a fresh temporary data directory; in cluster
// mode, a three-node cluster (see newClusterBroker).
func newBroker(t *testing.T, sets ...string) *broker {
	t.Helper()
	if clusterMode {
		return newClusterBroker(t, sets...)
	}
	return startBroker(t, t.TempDir(), sets...)
}

// seedList returns every address a client may bootstrap from: all three
// nodes in cluster mode, else the one broker.
func (b *broker) seedList() []string {
	if b.cluster != nil {
		return b.seeds
	}
	return []string{b.addr}
}

// bootstrap returns seedList joined with commas (kcat's -b, KGO_SEEDS).
func (b *broker) bootstrap() string { return strings.Join(b.seedList(), ",") }

func (b *broker) log(line string) {
	b.logMu.Lock()
	b.logs = append(b.logs, fmt.Sprintf("[run %d] %s", b.runs, line))
	b.logMu.Unlock()
}

// listenerAddrs returns each listener's address, by listener name, as the
// broker logged them (msg=listener name=… addr=…).
func (b *broker) listenerAddrs() map[string]string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	addrs := map[string]string{}
	for _, l := range b.logs {
		if m := listenerLineRE.FindStringSubmatch(l); m != nil {
			addrs[m[1]] = strings.Trim(m[2], `"`)
		}
	}
	return addrs
}

// waitLog reports whether the broker logs a line containing s within d
// (its stderr is read asynchronously).
func (b *broker) waitLog(s string, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		b.logMu.Lock()
		found := slices.ContainsFunc(b.logs, func(l string) bool { return strings.Contains(l, s) })
		b.logMu.Unlock()
		if found || time.Now().After(deadline) {
			return found
		}
	}
}

func (b *broker) dumpLogs(t *testing.T) {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	t.Logf("broker stderr (%d lines):", len(b.logs))
	for _, l := range b.logs {
		t.Log(l)
	}
}

func (b *broker) running() bool {
	if b.cmd == nil {
		return false
	}
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

var listenAddrRE = regexp.MustCompile(`\baddr="?([^"\s]+)"?`)

func (b *broker) start(t *testing.T) {
	t.Helper()
	b.singleProcess(t)
	b.runs++
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", b.dataDir}
	for _, s := range b.sets {
		args = append(args, "--set", s)
	}
	addrCh := make(chan string, 1)
	cmd := exec.Command(gregorBin, args...)
	// The broker dies with the test process, even when a test panics.
	cmd.SysProcAttr = dieWithTest()
	cmd.Stdout = &lineWriter{fn: func(l string) { b.log("stdout: " + l) }}
	cmd.Stderr = &lineWriter{fn: func(l string) {
		b.log(l)
		if strings.Contains(l, "msg=listening") {
			if m := listenAddrRE.FindStringSubmatch(l); m != nil {
				select {
				case addrCh <- m[1]:
				default:
				}
			}
		}
	}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", gregorBin, err)
	}
	b.cmd = cmd
	b.exited = make(chan struct{})
	go func(exited chan struct{}) {
		b.waitErr = cmd.Wait()
		close(exited)
	}(b.exited)

	select {
	case b.addr = <-addrCh:
	case <-b.exited:
		t.Fatalf("broker exited before printing msg=listening: %v", b.waitErr)
	case <-time.After(listenTimeout):
		b.kill()
		t.Fatalf("broker printed no msg=listening line with addr= within %v", listenTimeout)
	}
	if !strings.HasPrefix(b.addr, "127.0.0.1:") {
		t.Fatalf("listening addr = %q, want 127.0.0.1:PORT", b.addr)
	}
	b.waitReady(t)
}

// waitReady polls ApiVersions until the broker answers.
func (b *broker) waitReady(t *testing.T) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
		cancel()
		if err == nil {
			return
		}
		if !b.running() {
			t.Fatalf("broker exited while waiting for ApiVersions: %v", b.waitErr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker at %s did not answer ApiVersions within %v: %v", b.addr, readyTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and requires a clean exit (status 0) in time; after the
// deadline the process is killed and the test fails.
func (b *broker) stop(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !b.isExited() {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-b.exited:
	case <-time.After(shutdownTimeout):
		b.kill()
		t.Errorf("broker did not exit within %v of SIGTERM; killed", shutdownTimeout)
		return
	}
	if b.waitErr != nil {
		t.Errorf("broker exit after SIGTERM: %v (want status 0)", b.waitErr)
	}
}

func (b *broker) isExited() bool {
	select {
	case <-b.exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be reaped.
func (b *broker) kill() {
	if b.cluster != nil {
		panic("killing \"the broker\" in cluster mode: the test must call singleNodeOnly")
	}
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// restart stops the broker gracefully and starts it again on the same data
// directory. Clients must be recreated: the address changes. In cluster mode
// every node is stopped and started again (same addresses).
func (b *broker) restart(t *testing.T) {
	t.Helper()
	if b.cluster != nil {
		b.restartCluster(t, false)
		return
	}
	b.stop(t)
	b.start(t)
}

// crashRestart kills the broker with SIGKILL and starts it again on the same
// data directory. In cluster mode every node is killed at once and started
// again.
func (b *broker) crashRestart(t *testing.T) {
	t.Helper()
	if b.cluster != nil {
		b.restartCluster(t, true)
		return
	}
	b.kill()
	b.start(t)
}

// lineWriter calls fn for every complete line written to it.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// testCtx returns a context bounded by d and canceled at cleanup.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a kgo client seeded with the broker's current address,
// closed at cleanup.
func newClient(t *testing.T, b *broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(b.seedList()...),
		kgo.RetryTimeout(15 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client over a fresh kgo client.
func newAdmin(t *testing.T, b *broker) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, b))
}

// createTopic creates a topic with replication factor 1 and returns its ID.
// In cluster mode the replication factor is 3, and it returns once every
// node's Metadata lists the topic with a leader for each partition.
func createTopic(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) [16]byte {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, partitions, replicationFactor(), configs, topic)
	if err != nil {
		t.Fatalf("CreateTopic %q (%d partitions): %v (%s)", topic, partitions, err, resp.ErrMessage)
	}
	if resp.ID == ([16]byte{}) {
		t.Errorf("CreateTopic %q: zero topic id in response (CreateTopics v7+ returns the id)", topic)
	}
	if b := clusterBrokerOf(t); b != nil {
		b.waitTopic(t, topic, int(partitions))
	}
	return resp.ID
}

// topicID looks a topic's ID up with a Metadata request.
func topicID(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	md := metadata(t, ctx, cl, topic)
	if len(md.Topics) != 1 {
		t.Fatalf("Metadata %q: %d topics in response, want 1", topic, len(md.Topics))
	}
	return md.Topics[0].TopicID
}

// metadata issues a Metadata request for topics (all topics if none) without
// auto-creation.
func metadata(t *testing.T, ctx context.Context, cl *kgo.Client, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if len(topics) > 0 {
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
	} else {
		req.Topics = nil
	}
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata %v: %v", topics, err)
	}
	return resp
}

// topicName makes a topic name unique to the test.
func topicName(t *testing.T, suffix string) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	if suffix != "" {
		name += "." + suffix
	}
	return name
}
