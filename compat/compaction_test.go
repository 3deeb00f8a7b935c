package compat

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompaction_ReadersSeeLatestValues produces several rounds of values
// (lz4-compressed and uncompressed batches, some tombstones) for 40 keys to
// a compacted topic, waits until the broker's cleaner has compacted it, and
// reads it from the beginning with franz-go and kcat, before and after a
// restart: both see, in offset order, only records produced at exactly
// those offsets, and for every key its latest value (a deleted key's
// tombstone, kept within delete.retention.ms).
func TestCompaction_ReadersSeeLatestValues(t *testing.T) {
	kcatPath(t)
	b := newBroker(t, "log.cleaner.backoff.ms=20")
	ctx := testCtx(t, 60*time.Second)
	topic := topicName(t, "compacted")
	str := func(s string) *string { return &s }
	createTopic(t, ctx, newAdmin(t, b), topic, 1, map[string]*string{
		"cleanup.policy": str("compact"), "segment.bytes": str("1048576"), "min.cleanable.dirty.ratio": str("0.01")})

	type kv struct {
		key   string
		value *string
	}
	produced := map[int64]kv{}
	latest := map[string]int64{}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 12; round++ {
		codec := kgo.NoCompression()
		if round%2 == 1 {
			codec = kgo.Lz4Compression()
		}
		cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		var recs []*kgo.Record
		for k := 0; k < 40; k++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("k%02d", k))}
			if !(round == 11 && k%10 == 0) { // the last round deletes four keys
				r.Value = []byte(fmt.Sprintf("r%d-", round) + randomLetters(rng, 3000))
			}
			recs = append(recs, r)
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			e := kv{key: string(r.Record.Key)}
			if r.Record.Value != nil {
				v := string(r.Record.Value)
				e.value = &v
			}
			produced[r.Record.Offset] = e
			latest[e.key] = r.Record.Offset
		}
		cl.Close()
	}

	// read consumes the topic from the beginning with franz-go, checking
	// every record against what was produced at its offset.
	read := func() (n int, last map[string]int64) {
		cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cl.Close()
		last = map[string]int64{}
		prev := int64(-1)
		for prev < int64(len(produced))-1 {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				want, ok := produced[r.Offset]
				if !ok || r.Offset <= prev || want.key != string(r.Key) || (want.value == nil) != (r.Value == nil) ||
					(want.value != nil && *want.value != string(r.Value)) {
					t.Fatalf("franz-go: record at offset %d (after %d) is not the one produced there", r.Offset, prev)
				}
				prev = r.Offset
				last[string(r.Key)] = r.Offset
				n++
			})
		}
		return n, last
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, _ := read()
		if n < len(produced) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not compacted within 30s: %d records of %d", n, len(produced))
		}
		time.Sleep(50 * time.Millisecond)
	}

	check := func(when string) {
		n, last := read()
		for k, off := range latest {
			if last[k] != off {
				t.Fatalf("%s: franz-go: key %s last read at %d, latest produced at %d", when, k, last[k], off)
			}
		}
		out := kcat(t, "", "-C", "-b", b.addr, "-t", topic, "-o", "beginning", "-e", "-q", "-Z", "-f", "%o %k=%s\n")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("%s: kcat read %d records, franz-go %d", when, len(lines), n)
		}
		kcatLast := map[string]int64{}
		prev := int64(-1)
		for _, line := range lines {
			var off int64
			var rest string
			if _, err := fmt.Sscanf(line, "%d %s", &off, &rest); err != nil {
				t.Fatalf("%s: kcat line %q: %v", when, line, err)
			}
			k, v, _ := strings.Cut(rest, "=")
			want := produced[off]
			wantV := "NULL"
			if want.value != nil {
				wantV = *want.value
			}
			if off <= prev || want.key != k || wantV != v {
				t.Fatalf("%s: kcat: record at offset %d (after %d) is not the one produced there", when, off, prev)
			}
			prev = off
			kcatLast[k] = off
		}
		for k, off := range latest {
			if kcatLast[k] != off {
				t.Fatalf("%s: kcat: key %s last read at %d, latest produced at %d", when, k, kcatLast[k], off)
			}
		}
		t.Logf("%s: %d of %d records left, every key's latest value read by franz-go and kcat", when, n, len(produced))
	}
	check("after the clean")
	b.restart(t)
	check("after a restart")
}

func randomLetters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.Intn(26))
	}
	return string(b)
}
