// Package kafkaref starts a real Apache Kafka broker (KRaft, combined
// broker and controller, one node: Start) or a cluster of them
// (StartCluster) on loopback for comparisons with Gregor: the conformance
// report (compat/conformance, make conformance) and benchmarks
// (bench/cmd/gregor-bench, bench/cmd/cluster-bench).
//
// Kafka comes from Maven Central as org.apache.kafka:kafka_2.13 and its
// runtime dependencies, resolved by Maven from pom.xml beside this file
// (mvn dependency:build-classpath; the jars stay in the local repository
// ~/.m2). It needs a JDK 17+ (java) and Maven (mvn) on the PATH; Available
// says which is missing.
//
//	b, err := kafkaref.Start(ctx, kafkaref.Options{})
//	...
//	defer b.Stop()
//	client := kgo.NewClient(kgo.SeedBrokers(b.Addr))
package kafkaref

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of Options.
const (
	DefaultHeap         = "512m"
	DefaultStartTimeout = 2 * time.Minute
	stopTimeout         = 20 * time.Second // SIGTERM to exit, before SIGKILL
	killTimeout         = 5 * time.Second  // SIGKILL to exit
	resolveTimeout      = 10 * time.Minute // mvn dependency:build-classpath
)

// Options configure Start. The zero value is a usable default.
type Options struct {
	// Dir holds the configuration, the log directories and kafka.log (the
	// JVM's output). Empty: a new temporary directory, removed by Stop.
	Dir string
	// Props are server properties that override or add to the generated
	// ones (listeners, node.id, log.dirs, ... are generated).
	Props map[string]string
	// Heap is the JVM's -Xmx (and -Xms), e.g. "512m". Empty: DefaultHeap.
	Heap string
	// JVMArgs are extra JVM arguments placed before the main class.
	JVMArgs []string
	// StartTimeout bounds the start: format, JVM start and the broker
	// answering Metadata with itself in it. Zero: DefaultStartTimeout.
	StartTimeout time.Duration
	// Log, if set, also receives the JVM's stdout and stderr.
	Log io.Writer
}

// Broker is one running Kafka process.
type Broker struct {
	// Addr is the PLAINTEXT listener, 127.0.0.1:port: the bootstrap address.
	Addr string
	// ControllerAddr is the KRaft controller listener.
	ControllerAddr string
	// ClusterID is the id the storage was formatted with.
	ClusterID string
	// Version is the kafka_2.13 version from pom.xml.
	Version string
	// Dir is the working directory (see Options.Dir); LogFile the JVM's
	// output in it.
	Dir, LogFile string
	// StartDuration is the time from launching the JVM to the broker
	// answering Metadata with itself listed (format excluded).
	StartDuration time.Duration
	// FirstAnswer is the time from launching the JVM to its first answer
	// to ApiVersions on a new connection (format excluded): the broker is
	// listening, though perhaps not yet registered with its controller.
	FirstAnswer time.Duration

	removeDir bool
	cmd       *exec.Cmd
	exited    chan struct{}
	waitErr   error
	logf      *os.File
	out       io.Writer
	stopOnce  sync.Once
	stopErr   error
}

// PomDir is the directory of pom.xml (this package's source directory).
func PomDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "compat/kafkaref"
	}
	return filepath.Dir(file)
}

// Version is the kafka_2.13 version pom.xml names.
func Version() (string, error) {
	b, err := os.ReadFile(filepath.Join(PomDir(), "pom.xml"))
	if err != nil {
		return "", err
	}
	s := string(b)
	const open, close = "<kafka.version>", "</kafka.version>"
	i := strings.Index(s, open)
	j := strings.Index(s, close)
	if i < 0 || j < i {
		return "", errors.New("kafkaref: pom.xml has no <kafka.version>")
	}
	return strings.TrimSpace(s[i+len(open) : j]), nil
}

// Available reports whether java and mvn are on the PATH (nil) or which is
// missing.
func Available() error {
	var missing []string
	for _, c := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kafkaref: %s not on the PATH (install a JDK 17+ and Maven, e.g. apt-get install openjdk-17-jre-headless maven)", strings.Join(missing, " and "))
	}
	return nil
}

// Classpath resolves Kafka's classpath with Maven (downloading the jars into
// ~/.m2 the first time). The answer is cached by the pom's hash in the user
// cache directory while every jar it names exists.
func Classpath(ctx context.Context) (string, error) {
	if err := Available(); err != nil {
		return "", err
	}
	pom, err := os.ReadFile(filepath.Join(PomDir(), "pom.xml"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pom)
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = os.TempDir()
	}
	cacheFile := filepath.Join(cacheDir, "gregor-kafkaref", hex.EncodeToString(sum[:8])+".classpath")
	if b, err := os.ReadFile(cacheFile); err == nil && jarsExist(string(b)) {
		return strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(filepath.Dir(cacheFile), 0o755); err != nil {
		return "", err
	}
	tmp := cacheFile + ".tmp"
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "dependency:build-classpath", "-Dmdep.outputFile="+tmp)
	cmd.Dir = PomDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("kafkaref: mvn dependency:build-classpath: %v\n%s", err, out)
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		return "", err
	}
	if !jarsExist(string(b)) {
		return "", fmt.Errorf("kafkaref: mvn gave a classpath with missing jars: %s", b)
	}
	if err := os.Rename(tmp, cacheFile); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func jarsExist(cp string) bool {
	cp = strings.TrimSpace(cp)
	if cp == "" {
		return false
	}
	for _, j := range strings.Split(cp, string(os.PathListSeparator)) {
		if _, err := os.Stat(j); err != nil {
			return false
		}
	}
	return true
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// newClusterID is a random KRaft cluster id (16 bytes, URL-safe base64)
// that does not start with '-', as Kafka's Uuid.randomUuid makes them:
// kafka-storage's argument parser takes "-t -abc..." for a missing value
// (one id in 64 did, and failed the format).
func newClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// Start formats a fresh KRaft log directory and starts the broker, returning
// once it answers Metadata listing itself. On error nothing is left running.
func Start(ctx context.Context, opts Options) (b *Broker, err error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	version, cp, err := prepare(ctx)
	if err != nil {
		return nil, err
	}
	b = &Broker{Version: version, ClusterID: newClusterID()}
	if b.Dir, b.removeDir, err = workDir(opts.Dir, "kafkaref-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	ports, err := freePorts(2)
	if err != nil {
		return b, err
	}
	b.Addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	b.ControllerAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
	props := nodeProps(1, b.Addr, b.ControllerAddr, "1@"+b.ControllerAddr, b.Dir, 1)
	if err := b.setup(ctx, cp, props, opts); err != nil {
		return b, err
	}
	started, err := b.launch(cp, opts)
	if err != nil {
		return b, err
	}
	if err := b.waitAnswer(ctx, started); err != nil {
		return b, fmt.Errorf("%w (see %s)", err, b.LogFile)
	}
	if err := b.waitReady(ctx); err != nil {
		return b, fmt.Errorf("%w (see %s)", err, b.LogFile)
	}
	b.StartDuration = time.Since(started)
	return b, nil
}

func (o Options) withDefaults() Options {
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Heap == "" {
		o.Heap = DefaultHeap
	}
	return o
}

// prepare returns the Kafka version of pom.xml and its classpath.
func prepare(ctx context.Context) (version, cp string, err error) {
	if version, err = Version(); err != nil {
		return "", "", err
	}
	if cp, err = Classpath(ctx); err != nil {
		return "", "", err
	}
	return version, cp, nil
}

// nodeProps are the generated server properties of a combined broker and
// controller: node id, its two listeners, the static quorum voters
// ("1@host:port,2@host:port,..."), the log directory under dir, and the
// replication factor (and, for rf > 1, min.insync.replicas rf-1) of the
// internal topics.
func nodeProps(id int, addr, controllerAddr, voters, dir string, rf int) map[string]string {
	rfs, minISR := strconv.Itoa(rf), strconv.Itoa(max(1, rf-1))
	return map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(id),
		"controller.quorum.voters":                         voters,
		"listeners":                                        "PLAINTEXT://" + addr + ",CONTROLLER://" + controllerAddr,
		"advertised.listeners":                             "PLAINTEXT://" + addr,
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                                         filepath.Join(dir, "data"),
		"offsets.topic.replication.factor":                 rfs,
		"transaction.state.log.replication.factor":         rfs,
		"transaction.state.log.min.isr":                    minISR,
		"share.coordinator.state.topic.replication.factor": rfs,
		"share.coordinator.state.topic.min.isr":            minISR,
	}
}

// setup writes b.Dir/server.properties from props overridden by
// opts.Props, opens b.Dir/kafka.log and formats the storage with b.ClusterID.
func (b *Broker) setup(ctx context.Context, cp string, props map[string]string, opts Options) error {
	for k, v := range opts.Props {
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var conf bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&conf, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(b.confFile(), conf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := b.openLog(opts.Log, os.O_TRUNC); err != nil {
		return err
	}
	// Format the storage: a short-lived JVM tuned for start-up.
	format := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", cp,
		"kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", b.ClusterID, "-c", b.confFile())
	format.Stdout, format.Stderr = b.out, b.out
	format.SysProcAttr = GroupSysProcAttr()
	if err := format.Run(); err != nil {
		// The log usually lives in a test's temporary directory, gone by
		// the time anyone reads the failure: carry its end in the error.
		return fmt.Errorf("kafkaref: kafka-storage format: %v; the end of %s:\n%s", err, b.LogFile, tail(b.LogFile, 2048))
	}
	return nil
}

// tail returns up to the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

func (b *Broker) confFile() string { return filepath.Join(b.Dir, "server.properties") }

// openLog opens b.Dir/kafka.log as the JVM's output (mode os.O_TRUNC or
// os.O_APPEND), also written to w if it is not nil.
func (b *Broker) openLog(w io.Writer, mode int) error {
	b.LogFile = filepath.Join(b.Dir, "kafka.log")
	f, err := os.OpenFile(b.LogFile, os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return err
	}
	b.logf, b.out = f, f
	if w != nil {
		b.out = io.MultiWriter(f, w)
	}
	return nil
}

// launch starts the broker's JVM on the written configuration and returns
// the time it was started.
func (b *Broker) launch(cp string, opts Options) (time.Time, error) {
	args := []string{"-Xmx" + opts.Heap, "-Xms" + opts.Heap, "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}
	args = append(args, opts.JVMArgs...)
	args = append(args, "-cp", cp, "kafka.Kafka", b.confFile())
	b.cmd = exec.Command("java", args...)
	b.cmd.Dir = b.Dir
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	// Its own process group, so Stop reaches every process it starts; and
	// it dies with this process.
	b.cmd.SysProcAttr = GroupSysProcAttr()
	started := time.Now()
	if err := b.cmd.Start(); err != nil {
		return started, fmt.Errorf("kafkaref: starting java: %w", err)
	}
	b.exited = make(chan struct{})
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	return started, nil
}

// Pid is the JVM's process id (also its process group id).
func (b *Broker) Pid() int {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// Exited is closed once the JVM has exited.
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// Kill sends SIGKILL to the JVM's process group at once, without waiting;
// for interrupted programs. Stop must still be called to clean up.
func (b *Broker) Kill() {
	if pid := b.Pid(); pid > 0 {
		_ = SignalGroup(pid, syscall.SIGKILL)
	}
}

// waitAnswer polls ApiVersions v0 on new connections every millisecond until
// the broker answers and sets FirstAnswer.
func (b *Broker) waitAnswer(ctx context.Context, started time.Time) error {
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = APIVersions(rctx, b.Addr)
		cancel()
		if last == nil {
			b.FirstAnswer = time.Since(started)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaref: no ApiVersions answer: %w (last error %v)", ctx.Err(), last)
		case <-b.exited:
			return fmt.Errorf("kafkaref: the JVM exited during start: %v", b.waitErr)
		case <-time.After(time.Millisecond):
		}
	}
}

// APIVersions sends one ApiVersions v0 request on a new connection to addr
// and checks the answer's correlation id and error code: the probe of "the
// broker answers" that start-time measurements use, for Kafka and Gregor
// alike.
func APIVersions(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	const clientID = "kafkaref"
	// size, api key 18, version 0, correlation id, client id.
	req := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(clientID)))
	req = binary.BigEndian.AppendUint16(req, 18)
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, 7)
	req = binary.BigEndian.AppendUint16(req, uint16(len(clientID)))
	req = append(req, clientID...)
	if _, err := conn.Write(req); err != nil {
		return err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 6 || n > 1<<20 {
		return fmt.Errorf("ApiVersions: response size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if corr := binary.BigEndian.Uint32(body); corr != 7 {
		return fmt.Errorf("ApiVersions: correlation id %d", corr)
	}
	if code := int16(binary.BigEndian.Uint16(body[4:])); code != 0 {
		return fmt.Errorf("ApiVersions: error code %d", code)
	}
	return nil
}

// waitReady polls Metadata until the broker lists itself (it is registered
// and unfenced, so topics can be created).
func (b *Broker) waitReady(ctx context.Context) error {
	return waitBrokers(ctx, b.Addr, 1, -1, []*Broker{b})
}

// waitBrokers polls Metadata on the broker at addr until it lists n
// brokers, node id need among them unless it is -1 (registered and
// unfenced), or one of procs exits.
func waitBrokers(ctx context.Context, addr string, n int, need int32, procs []*Broker) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	ok := func(resp *kmsg.MetadataResponse) bool {
		if len(resp.Brokers) < n {
			return false
		}
		for _, b := range resp.Brokers {
			if b.NodeID == need {
				return true
			}
		}
		return need == -1
	}
	for {
		for _, b := range procs {
			select {
			case <-b.exited:
				return fmt.Errorf("kafkaref: the JVM of %s exited: %v (see %s)", b.Addr, b.waitErr, b.LogFile)
			default:
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		kresp, err := seed.Request(rctx, kmsg.NewPtrMetadataRequest())
		cancel()
		if err == nil {
			resp := kresp.(*kmsg.MetadataResponse)
			if ok(resp) {
				return nil
			}
			err = fmt.Errorf("%d brokers of %d listed", len(resp.Brokers), n)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaref: not ready: %w (last error %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop ends the JVM (SIGTERM to its process group, SIGKILL after 20 s) and
// removes a temporary Dir. It is safe to call more than once.
func (b *Broker) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = b.stop() })
	return b.stopErr
}

func (b *Broker) stop() error {
	var err error
	if b.cmd != nil && b.cmd.Process != nil {
		pgid := b.cmd.Process.Pid
		_ = SignalGroup(pgid, syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(stopTimeout):
			_ = SignalGroup(pgid, syscall.SIGKILL)
			select {
			case <-b.exited:
			case <-time.After(killTimeout):
				err = fmt.Errorf("kafkaref: pid %d still running %v after SIGKILL", pgid, killTimeout)
			}
		}
		// Anything the JVM left in its group.
		_ = SignalGroup(pgid, syscall.SIGKILL)
	}
	if b.logf != nil {
		b.logf.Close()
	}
	if b.removeDir && err == nil {
		os.RemoveAll(b.Dir)
	}
	return err
}

// workDir returns dir, made if missing, or when dir is empty a new
// temporary directory named after prefix, which the caller removes (temp).
func workDir(dir, prefix string) (path string, temp bool, err error) {
	if dir == "" {
		path, err = os.MkdirTemp("", prefix)
		return path, err == nil, err
	}
	return dir, false, os.MkdirAll(dir, 0o755)
}

// JavaVersion is the first line of java -version ("java ?" without java).
func JavaVersion() string {
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return "java ?"
	}
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}
