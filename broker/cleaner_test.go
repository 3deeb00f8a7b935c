package broker

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCleaner_CompactsTopicInBackground: on a compacted topic a record
// without a key is refused with INVALID_RECORD; the cleaner thread cleans
// the topic's full segment once its dirty ratio passes
// min.cleanable.dirty.ratio; a franz-go consumer reading from the start
// then sees fewer records, each at its original offset, ending with the
// latest value of every key; the metrics show the clean.
func TestCleaner_CompactsTopicInBackground(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"log.cleaner.backoff.ms": "10"})
	if _, err := b.createTopic("comp", 1, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.1"}); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr, kgo.DefaultProduceTopic("comp"), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.ConsumeTopics("comp"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t)

	got := producePartition(t, cl, produceReq("comp", 0, makeBatch([]string{"no key"}, -1, -1, -1)))
	const keyless = "Compacted topic cannot accept message without key in topic partition comp-0."
	if got.ErrorCode != kerr.InvalidRecord.Code || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, keyless) ||
		len(got.ErrorRecords) != 1 || got.ErrorRecords[0].RelativeOffset != 0 || *got.ErrorRecords[0].ErrorMessage != keyless {
		t.Fatalf("keyless record on a compacted topic: %v %+v", kerr.ErrorForCode(got.ErrorCode), got)
	}

	produced := map[int64]string{} // offset → key=value
	latest := map[string]int64{}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 14; round++ {
		var recs []*kgo.Record
		for k := 0; k < 40; k++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%02d", k)), Value: []byte(fmt.Sprintf("r%d-%x", round, rng.Int63()) + randomText(rng, 4000))})
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			produced[r.Record.Offset] = string(r.Record.Key) + "=" + string(r.Record.Value)
			latest[string(r.Record.Key)] = r.Record.Offset
		}
	}
	p := b.topics["comp"].partitions[0]
	waitFor(t, 20*time.Second, "a clean", func() bool {
		_, _, last := b.cleanerStats(p)
		return last >= 0
	})

	lastSeen := map[string]int64{}
	n, prev := 0, int64(-1)
	for n == 0 || prev < p.log.HighWatermark()-1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= prev || produced[r.Offset] != string(r.Key)+"="+string(r.Value) {
				t.Fatalf("record at %d (after %d) is not the one produced there", r.Offset, prev)
			}
			prev = r.Offset
			lastSeen[string(r.Key)] = r.Offset
			n++
		})
	}
	if n >= len(produced) {
		t.Fatalf("read %d records of %d produced: nothing compacted", n, len(produced))
	}
	for k, off := range latest {
		if lastSeen[k] != off {
			t.Fatalf("key %s: last read at %d, latest produced at %d", k, lastSeen[k], off)
		}
	}
	mfs, err := b.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter() != nil {
				found[mf.GetName()] = m.GetCounter().GetValue()
			} else if m.GetGauge() != nil {
				found[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	if found["gregor_cleaner_bytes_read_total"] < 1<<20 || found["gregor_cleaner_bytes_written_total"] <= 0 {
		t.Fatalf("cleaner metrics: %v", found)
	}
	if _, ok := found["gregor_partition_dirty_ratio"]; !ok {
		t.Fatalf("no dirty ratio metric: %v", found)
	}
}

// randomText is n letters that do not compress much.
func randomText(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.Intn(26))
	}
	return string(b)
}

// TestCleaner_ThreadsAreDynamic: log.cleaner.threads is a per-broker
// dynamic config, as in Kafka: set to 2 it is described with source
// DYNAMIC_BROKER_CONFIG and the cleaner restarts with two threads, which
// still compact; a count beyond double the current one, or 0, is refused
// with INVALID_REQUEST; deleting it returns to the static value.
func TestCleaner_ThreadsAreDynamic(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"log.cleaner.backoff.ms": "10"})
	cl := newClient(t, addr)
	rc := newConfigConn(t, addr)
	if got := incAlterBroker(t, rc, "0", false, set("log.cleaner.threads", "2")); got != "ok" {
		t.Fatalf("set log.cleaner.threads=2: %s", got)
	}
	if got, want := describeConfig(t, cl, kmsg.ConfigResourceTypeBroker, "0", "log.cleaner.threads"),
		"2/DYNAMIC_BROKER_CONFIG/false [log.cleaner.threads=2/DYNAMIC_BROKER_CONFIG log.cleaner.threads=1/DEFAULT_CONFIG]"; got != want {
		t.Errorf("described %s, want %s", got, want)
	}
	if n := b.cleanerThreads(); n != 2 {
		t.Fatalf("%d cleaner threads after the change, want 2", n)
	}
	for v, want := range map[string]string{
		"5": "INVALID_REQUEST: Log cleaner threads cannot be increased to more than double the current value 2",
		"0": "INVALID_REQUEST: Log cleaner threads should be at least 1",
	} {
		if got := incAlterBroker(t, rc, "0", false, set("log.cleaner.threads", v)); got != want {
			t.Errorf("log.cleaner.threads=%s: %s, want %s", v, got, want)
		}
	}

	// The restarted threads compact.
	if _, err := b.createTopic("comp-dyn", 1, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.1"}); err != nil {
		t.Fatal(err)
	}
	pc := newClient(t, addr, kgo.DefaultProduceTopic("comp-dyn"))
	rng := rand.New(rand.NewSource(2))
	for round := 0; round < 14; round++ {
		var recs []*kgo.Record
		for k := 0; k < 40; k++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%02d", k)), Value: []byte(randomText(rng, 4000))})
		}
		if err := pc.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := b.topics["comp-dyn"].partitions[0]
	waitFor(t, 20*time.Second, "a clean by the restarted threads", func() bool {
		_, _, last := b.cleanerStats(p)
		return last >= 0
	})

	if got := incAlterBroker(t, rc, "0", false, op(kmsg.IncrementalAlterConfigOpDelete, "log.cleaner.threads", nil)); got != "ok" {
		t.Fatalf("delete: %s", got)
	}
	if n := b.cleanerThreads(); n != 1 {
		t.Fatalf("%d cleaner threads after the deletion, want 1", n)
	}
}
