// Package kafkaref starts a real Apache Kafka broker (KRaft, combined
// broker and controller, one node) on loopback for comparisons with Gregor:
// the conformance report (compat/conformance, make conformance) and
// benchmarks.
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

// newClusterID is a random KRaft cluster id (16 bytes, URL-safe base64).
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Start formats a fresh KRaft log directory and starts the broker, returning
// once it answers Metadata listing itself. On error nothing is left running.
func Start(ctx context.Context, opts Options) (b *Broker, err error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Heap == "" {
		opts.Heap = DefaultHeap
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	version, err := Version()
	if err != nil {
		return nil, err
	}
	cp, err := Classpath(ctx)
	if err != nil {
		return nil, err
	}
	b = &Broker{Version: version, Dir: opts.Dir, ClusterID: newClusterID()}
	if b.Dir == "" {
		if b.Dir, err = os.MkdirTemp("", "kafkaref-"); err != nil {
			return nil, err
		}
		b.removeDir = true
	} else if err := os.MkdirAll(b.Dir, 0o755); err != nil {
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
	props := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          "1",
		"controller.quorum.voters":                         "1@" + b.ControllerAddr,
		"listeners":                                        "PLAINTEXT://" + b.Addr + ",CONTROLLER://" + b.ControllerAddr,
		"advertised.listeners":                             "PLAINTEXT://" + b.Addr,
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                                         filepath.Join(b.Dir, "data"),
		"offsets.topic.replication.factor":                 "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
	}
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
	confFile := filepath.Join(b.Dir, "server.properties")
	if err := os.WriteFile(confFile, conf.Bytes(), 0o644); err != nil {
		return b, err
	}
	b.LogFile = filepath.Join(b.Dir, "kafka.log")
	if b.logf, err = os.Create(b.LogFile); err != nil {
		return b, err
	}
	var out io.Writer = b.logf
	if opts.Log != nil {
		out = io.MultiWriter(b.logf, opts.Log)
	}

	// Format the storage: a short-lived JVM tuned for start-up.
	format := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", cp,
		"kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", b.ClusterID, "-c", confFile)
	format.Stdout, format.Stderr = out, out
	format.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := format.Run(); err != nil {
		return b, fmt.Errorf("kafkaref: kafka-storage format: %v (see %s)", err, b.LogFile)
	}

	args := []string{"-Xmx" + opts.Heap, "-Xms" + opts.Heap, "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}
	args = append(args, opts.JVMArgs...)
	args = append(args, "-cp", cp, "kafka.Kafka", confFile)
	b.cmd = exec.Command("java", args...)
	b.cmd.Dir = b.Dir
	b.cmd.Stdout, b.cmd.Stderr = out, out
	// Its own process group, so Stop reaches every process it starts; and
	// it dies with this process.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := b.cmd.Start(); err != nil {
		return b, fmt.Errorf("kafkaref: starting java: %w", err)
	}
	b.exited = make(chan struct{})
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	if err := b.waitAnswer(ctx, started); err != nil {
		return b, fmt.Errorf("%w (see %s)", err, b.LogFile)
	}
	if err := b.waitReady(ctx); err != nil {
		return b, fmt.Errorf("%w (see %s)", err, b.LogFile)
	}
	b.StartDuration = time.Since(started)
	return b, nil
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
		_ = syscall.Kill(-pid, syscall.SIGKILL)
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		select {
		case <-b.exited:
			return fmt.Errorf("kafkaref: the JVM exited during start: %v", b.waitErr)
		default:
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		cancel()
		if err == nil && len(resp.Brokers) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaref: not ready: %w (last error %v)", ctx.Err(), err)
		case <-b.exited:
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
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-b.exited:
			case <-time.After(killTimeout):
				err = fmt.Errorf("kafkaref: pid %d still running %v after SIGKILL", pgid, killTimeout)
			}
		}
		// Anything the JVM left in its group.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if b.logf != nil {
		b.logf.Close()
	}
	if b.removeDir && err == nil {
		os.RemoveAll(b.Dir)
	}
	return err
}
