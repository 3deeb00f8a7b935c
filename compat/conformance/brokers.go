package conformance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommonProps are the server properties both brokers get: one node with id
// 1, no initial rebalance delay, one partition for the internal topics, and
// no time retention (hand-built batches carry 2020 timestamps), and the
// ACL authorizer on with the PLAINTEXT principal (User:ANONYMOUS) a super
// user, so the ACL APIs answer and every other request is allowed.
var CommonProps = map[string]string{
	"authorizer.class.name":                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":                          "User:ANONYMOUS",
	"node.id":                              "1",
	"group.initial.rebalance.delay.ms":     "0",
	"offsets.topic.num.partitions":         "1",
	"transaction.state.log.num.partitions": "1",
	"log.retention.ms":                     "-1",
}

// ModuleRoot is the directory of Gregor's go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Gregor is one running gregor process.
type Gregor struct {
	Addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// BuildGregor builds ./cmd/gregor into dir and returns the binary's path.
func BuildGregor(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "gregor")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gregor")
	cmd.Dir = ModuleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gregor: %v\n%s", err, out)
	}
	return bin, nil
}

var listenRE = regexp.MustCompile(`msg=listening.*\baddr="?([^"\s]+)"?`)

// StartGregor starts bin on 127.0.0.1:0 with dataDir and CommonProps and
// returns once it printed its address. log receives its stderr.
func StartGregor(bin, dataDir string, log io.Writer) (*Gregor, error) {
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir}
	keys := make([]string, 0, len(CommonProps))
	for k := range CommonProps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--set", k+"="+CommonProps[k])
	}
	g := &Gregor{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	g.cmd.SysProcAttr = kafkaref.GroupSysProcAttr()
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if log != nil {
				fmt.Fprintln(log, sc.Text())
			}
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { g.cmd.Wait(); close(g.exited) }()
	select {
	case g.Addr = <-addr:
		return g, nil
	case <-g.exited:
		return nil, fmt.Errorf("gregor exited before listening")
	case <-time.After(30 * time.Second):
		g.Stop()
		return nil, fmt.Errorf("gregor printed no msg=listening within 30s")
	}
}

// Stop sends SIGTERM, then SIGKILL after 15 s.
func (g *Gregor) Stop() {
	_ = kafkaref.SignalGroup(g.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		_ = kafkaref.SignalGroup(g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
	}
}

// Pair is a Kafka broker and a Gregor broker started side by side.
type Pair struct {
	Kafka  *kafkaref.Broker
	Gregor *Gregor
	dir    string
}

// StartPair builds and starts Gregor (GREGOR_BIN names a binary to use
// instead) and Kafka, each with CommonProps. logs gets both brokers' output.
func StartPair(ctx context.Context, logs io.Writer) (*Pair, error) {
	dir, err := os.MkdirTemp("", "gregor-conformance-")
	if err != nil {
		return nil, err
	}
	p := &Pair{dir: dir}
	bin := os.Getenv("GREGOR_BIN")
	if bin == "" {
		if bin, err = BuildGregor(ctx, dir); err != nil {
			p.Stop()
			return nil, err
		}
	}
	if p.Gregor, err = StartGregor(bin, filepath.Join(dir, "gregor-data"), logs); err != nil {
		p.Stop()
		return nil, err
	}
	if p.Kafka, err = kafkaref.Start(ctx, kafkaref.Options{Dir: filepath.Join(dir, "kafka"), Props: CommonProps, Log: logs}); err != nil {
		p.Stop()
		return nil, err
	}
	if err := copyClusterDefaults(p.Kafka.Addr, p.Gregor.Addr); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// copyClusterDefaults sets on Gregor the cluster-wide dynamic broker
// configs (resource BROKER "") that a freshly formatted Kafka already has,
// so both brokers start from the same state. Kafka 4.4's KRaft bootstrap
// writes one for min.insync.replicas (the ELR feature, KIP-966, requires
// the cluster-level value), which topics then report with source
// DYNAMIC_DEFAULT_BROKER_CONFIG; without it Gregor's answer would be
// DEFAULT_CONFIG for the same value, a difference of the setup and not of
// the broker.
func copyClusterDefaults(kafkaAddr, gregorAddr string) error {
	kc, err := dialRaw(kafkaAddr)
	if err != nil {
		return err
	}
	defer kc.close()
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.Version = 4
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	dreq.Resources = append(dreq.Resources, dr)
	resp, err := kc.do(dreq)
	if err != nil {
		return fmt.Errorf("describing Kafka's cluster defaults: %w", err)
	}
	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ireq.Version = 1
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		if r.ErrorCode != 0 {
			return fmt.Errorf("describing Kafka's cluster defaults: error %d", r.ErrorCode)
		}
		for _, c := range r.Configs {
			if c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || c.Value == nil {
				continue
			}
			ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			ic.Name, ic.Value = c.Name, c.Value
			ir.Configs = append(ir.Configs, ic)
		}
	}
	if len(ir.Configs) == 0 {
		return nil
	}
	ireq.Resources = append(ireq.Resources, ir)
	gc, err := dialRaw(gregorAddr)
	if err != nil {
		return err
	}
	defer gc.close()
	ans, err := gc.do(ireq)
	if err != nil {
		return fmt.Errorf("setting Kafka's cluster defaults on Gregor: %w", err)
	}
	for _, r := range ans.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if r.ErrorCode != 0 {
			return fmt.Errorf("setting Kafka's cluster defaults on Gregor: error %d", r.ErrorCode)
		}
	}
	return nil
}

// Stop stops both brokers and removes their data.
func (p *Pair) Stop() {
	if p.Kafka != nil {
		p.Kafka.Stop()
	}
	if p.Gregor != nil {
		p.Gregor.Stop()
	}
	os.RemoveAll(p.dir)
}
