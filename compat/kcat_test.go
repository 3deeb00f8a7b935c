package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// kcat (librdkafka) as an external program. Without kcat on PATH these tests
// fail unless GREGOR_SKIP_KCAT=1 says to skip them: CI must never skip
// silently.

func kcatPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("GREGOR_SKIP_KCAT") == "1" {
		t.Skip("GREGOR_SKIP_KCAT=1")
	}
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not found on PATH (%v); install it (apt-get install -y kcat) or set GREGOR_SKIP_KCAT=1", err)
	}
	return p
}

// kcat runs kcat with args and stdin, bounded by 20s, and returns stdout.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (killed after 20s)", err)
		}
		t.Fatalf("kcat %s: %v\nstderr:\n%s\nstdout (%d bytes, last lines):\n%s", strings.Join(args, " "), err,
			tailString(stderr.String(), 20), stdout.Len(), tailString(stdout.String(), 5))
	}
	return stdout.String()
}

func TestKcat_Metadata(t *testing.T) {
	kcatPath(t)
	b := newBroker(t)
	ctx := testCtx(t, 30*time.Second)
	adm := newAdmin(t, b)
	t1, t2 := topicName(t, "one"), topicName(t, "three")
	createTopic(t, ctx, adm, t1, 1, nil)
	createTopic(t, ctx, adm, t2, 3, nil)

	nodes := expectedNodes()
	out := kcat(t, "", "-L", "-b", b.bootstrap(), "-m", "10")
	wants := []string{
		fmt.Sprintf(" %d brokers:\n", len(nodes)),
		fmt.Sprintf("  topic %q with 1 partitions:\n", t1),
		fmt.Sprintf("  topic %q with 3 partitions:\n", t2),
	}
	for i, addr := range b.seedList() {
		wants = append(wants, fmt.Sprintf("  broker %d at %s", nodes[i], addr))
	}
	if !clusterMode {
		wants = append(wants, "    partition 2, leader 0, replicas: 0, isrs: 0\n")
	} else if !regexp.MustCompile(`    partition 2, leader [123], replicas: [123],[123],[123], isrs: [123],[123],[123]\n`).MatchString(out) {
		t.Errorf("kcat -L output lacks partition 2 with a leader, three replicas and three in the ISR:\n%s", out)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, out)
		}
	}

	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int32  `json:"partition"`
				Leader    int32  `json:"leader"`
				Error     string `json:"error"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	js := kcat(t, "", "-L", "-J", "-b", b.bootstrap(), "-m", "10")
	if err := json.Unmarshal([]byte(js), &md); err != nil {
		t.Fatalf("kcat -L -J output is not JSON: %v\n%s", err, js)
	}
	var brokers, wantBrokers []string
	for _, mb := range md.Brokers {
		brokers = append(brokers, fmt.Sprintf("%d@%s", mb.ID, mb.Name))
	}
	for i, addr := range b.seedList() {
		wantBrokers = append(wantBrokers, fmt.Sprintf("%d@%s", nodes[i], addr))
	}
	slices.Sort(brokers)
	if !slices.Equal(brokers, wantBrokers) {
		t.Errorf("kcat -L -J brokers = %v, want %v", brokers, wantBrokers)
	}
	var names []string
	for _, tp := range md.Topics {
		names = append(names, tp.Topic)
		if tp.Error != "" {
			t.Errorf("topic %q error %q", tp.Topic, tp.Error)
		}
		for _, p := range tp.Partitions {
			if !slices.Contains(nodes, p.Leader) || p.Error != "" {
				t.Errorf("topic %q partition %d: leader %d error %q", tp.Topic, p.Partition, p.Leader, p.Error)
			}
		}
	}
	slices.Sort(names)
	if want := []string{t1, t2}; !slices.Equal(names, want) {
		t.Errorf("kcat -L -J topics = %q, want %q", names, want)
	}
}

func TestKcat_ProduceConsume(t *testing.T) {
	kcatPath(t)
	b := newBroker(t)
	adm := newAdmin(t, b)

	var lines, want []string
	for i := range 50 {
		// Compressible values: librdkafka sends a batch uncompressed
		// when compression does not make it smaller.
		k, v := fmt.Sprintf("k%d", i%5), fmt.Sprintf("v%d-%s", i, strings.Repeat("abc", 100))
		lines = append(lines, k+":"+v)
		want = append(want, k+"="+v)
	}
	input := strings.Join(lines, "\n") + "\n"

	for _, tc := range []struct {
		name   string
		extra  []string
		codec  int16
		idempo bool
	}{
		{"plain", nil, 0, false},
		{"idempotent", []string{"-X", "enable.idempotence=true"}, 0, true},
		{"gzip", []string{"-X", "compression.codec=gzip"}, 1, false},
		{"snappy", []string{"-X", "compression.codec=snappy"}, 2, false},
		{"lz4", []string{"-z", "lz4"}, 3, false},
		{"lz4-X", []string{"-X", "compression.codec=lz4"}, 3, false},
		{"zstd", []string{"-X", "compression.codec=zstd"}, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 60*time.Second)
			topic := topicName(t, "")
			id := createTopic(t, ctx, adm, topic, 1, nil)
			args := append([]string{"-P", "-b", b.bootstrap(), "-t", topic, "-K:", "-X", "linger.ms=50"}, tc.extra...)
			kcat(t, input, args...)

			out := kcat(t, "", "-C", "-b", b.bootstrap(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n")
			if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
				t.Errorf("kcat -C returned %d lines, want %d in produce order:\n%s", len(got), len(want), out)
			}
			out = kcat(t, "", "-C", "-b", b.bootstrap(), "-t", topic, "-o", "45", "-e", "-q", "-f", "%o %k=%s\n")
			var wantTail []string
			for i := 45; i < 50; i++ {
				wantTail = append(wantTail, fmt.Sprintf("%d %s", i, want[i]))
			}
			if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, wantTail) {
				t.Errorf("kcat -C -o 45 returned:\n%s\nwant:\n%s", out, strings.Join(wantTail, "\n"))
			}

			p := rawFetch(t, ctx, newClient(t, b), topic, id, 0, 0)
			if p.ErrorCode != 0 {
				t.Fatalf("raw Fetch: %s", errName(p.ErrorCode))
			}
			for _, rb := range parseBatches(t, p.RecordBatches) {
				if rb.Attributes&7 != tc.codec {
					t.Errorf("kcat batch at %d stored with codec %d, want %d", rb.FirstOffset, rb.Attributes&7, tc.codec)
				}
				if tc.idempo != (rb.ProducerID >= 0) {
					t.Errorf("kcat batch at %d: producer id %d (idempotent=%v)", rb.FirstOffset, rb.ProducerID, tc.idempo)
				}
			}
		})
	}
}

// TestKcat_ThreePartitions produces keyed lines with librdkafka's default
// partitioner and checks each key stays on one partition, in order.
func TestKcat_ThreePartitions(t *testing.T) {
	kcatPath(t)
	b := newBroker(t)
	ctx := testCtx(t, 60*time.Second)
	topic := topicName(t, "")
	createTopic(t, ctx, newAdmin(t, b), topic, 3, nil)

	var lines []string
	wantByKey := make(map[string][]string)
	for i := range 300 {
		k := fmt.Sprintf("key%d", i%6)
		v := fmt.Sprintf("value%03d", i)
		lines = append(lines, k+":"+v)
		wantByKey[k] = append(wantByKey[k], v)
	}
	kcat(t, strings.Join(lines, "\n")+"\n", "-P", "-b", b.bootstrap(), "-t", topic, "-K:")
	out := kcat(t, "", "-C", "-b", b.bootstrap(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %k %s\n")

	gotByKey := make(map[string][]string)
	keyPart := make(map[string]string)
	partOffs := make(map[string][]string)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("unexpected kcat line %q", l)
		}
		p, o, k, v := f[0], f[1], f[2], f[3]
		if prev, ok := keyPart[k]; ok && prev != p {
			t.Errorf("key %s on partitions %s and %s", k, prev, p)
		}
		keyPart[k] = p
		partOffs[p] = append(partOffs[p], o)
		gotByKey[k] = append(gotByKey[k], v)
	}
	for k, want := range wantByKey {
		if !slices.Equal(gotByKey[k], want) {
			t.Errorf("key %s: consumed %v, want %v", k, gotByKey[k], want)
		}
	}
	for p, offs := range partOffs {
		for i, o := range offs {
			if o != fmt.Sprint(i) {
				t.Errorf("partition %s: position %d holds offset %s", p, i, o)
				break
			}
		}
	}
}
