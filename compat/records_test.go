package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record helpers shared by the franz-go tests.

// keyedRecords returns perKey records for each of keys, interleaved key by
// key, each with a "key" and a "seq" header and a distinct value.
func keyedRecords(topic string, keys []string, perKey int) []*kgo.Record {
	var rs []*kgo.Record
	for i := range perKey {
		for _, k := range keys {
			rs = append(rs, &kgo.Record{
				Topic: topic,
				Key:   []byte(k),
				Value: fmt.Appendf(nil, "%s-value-%05d", k, i),
				Headers: []kgo.RecordHeader{
					{Key: "key", Value: []byte(k)},
					{Key: "seq", Value: []byte(strconv.Itoa(i))},
					{Key: "empty", Value: []byte{}},
				},
			})
		}
	}
	return rs
}

// produceAll produces rs synchronously and fails on any error; rs then carry
// their assigned partitions and offsets.
func produceAll(t *testing.T, ctx context.Context, cl *kgo.Client, rs []*kgo.Record) {
	t.Helper()
	results := cl.ProduceSync(ctx, rs...)
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("produce record %d (key %q) failed: %v (first of possibly %d)", i, r.Record.Key, r.Err, len(results))
		}
	}
}

// consumeN polls cl until it has n records or ctx expires. Fetch errors fail
// the test. If wait > 0 it then polls for wait more and fails on any extra
// record.
func consumeN(t *testing.T, ctx context.Context, cl *kgo.Client, n int, wait time.Duration) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline (%v)", len(got), n, ctx.Err())
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			t.Fatalf("fetch error on %s[%d] after %d records: %v", fe.Topic, fe.Partition, len(got), fe.Err)
		}
		got = append(got, fs.Records()...)
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		fs := cl.PollFetches(wctx)
		cancel()
		if extra := fs.Records(); len(extra) > 0 {
			t.Errorf("consumed %d records beyond the %d produced; first extra: %s", len(extra), n, describe(extra[0]))
		}
	}
	if len(got) > n {
		t.Errorf("consumed %d records, produced %d; first extra: %s", len(got), n, describe(got[n]))
	}
	return got
}

func describe(r *kgo.Record) string {
	return fmt.Sprintf("%s[%d]@%d key=%q value=%q headers=%v ts=%d", r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp.UnixMilli())
}

type partOff struct {
	p int32
	o int64
}

// checkSame requires got to be exactly want: same (partition, offset) set,
// same keys, values, headers and millisecond timestamps at each.
func checkSame(t *testing.T, want, got []*kgo.Record) {
	t.Helper()
	byPos := make(map[partOff]*kgo.Record, len(got))
	for _, r := range got {
		pos := partOff{r.Partition, r.Offset}
		if prev, ok := byPos[pos]; ok {
			t.Errorf("offset delivered twice: %s and %s", describe(prev), describe(r))
		}
		byPos[pos] = r
	}
	bad := 0
	for _, w := range want {
		g, ok := byPos[partOff{w.Partition, w.Offset}]
		if !ok {
			t.Errorf("missing record %s", describe(w))
			bad++
		} else if diff := recordDiff(w, g); diff != "" {
			t.Errorf("record %s[%d]@%d differs: %s", w.Topic, w.Partition, w.Offset, diff)
			bad++
		}
		if bad >= 10 {
			t.Fatalf("stopping after %d bad records", bad)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d records, want %d", len(got), len(want))
	}
}

// recordDiff describes how got differs from want, or returns "".
func recordDiff(want, got *kgo.Record) string {
	var d []string
	if got.Topic != want.Topic {
		d = append(d, fmt.Sprintf("topic %q, want %q", got.Topic, want.Topic))
	}
	if !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) {
		d = append(d, fmt.Sprintf("key %q (nil=%v), want %q (nil=%v)", got.Key, got.Key == nil, want.Key, want.Key == nil))
	}
	if !bytes.Equal(got.Value, want.Value) || (got.Value == nil) != (want.Value == nil) {
		d = append(d, fmt.Sprintf("value %q (nil=%v), want %q (nil=%v)", got.Value, got.Value == nil, want.Value, want.Value == nil))
	}
	if !slices.EqualFunc(got.Headers, want.Headers, func(a, b kgo.RecordHeader) bool {
		return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil)
	}) {
		d = append(d, fmt.Sprintf("headers %q, want %q", got.Headers, want.Headers))
	}
	if got.Timestamp.UnixMilli() != want.Timestamp.UnixMilli() {
		d = append(d, fmt.Sprintf("timestamp %d, want %d", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli()))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

// checkContiguous requires each partition's offsets in rs to be exactly
// 0..n-1 and returns the per-partition counts.
func checkContiguous(t *testing.T, rs []*kgo.Record) map[int32]int64 {
	t.Helper()
	offs := make(map[int32][]int64)
	for _, r := range rs {
		offs[r.Partition] = append(offs[r.Partition], r.Offset)
	}
	counts := make(map[int32]int64)
	for p, os := range offs {
		slices.Sort(os)
		for i, o := range os {
			if o != int64(i) {
				t.Errorf("partition %d: offsets not contiguous from 0: position %d holds offset %d", p, i, o)
				break
			}
		}
		counts[p] = int64(len(os))
	}
	return counts
}

// checkPerKeyOrder requires every key to live on one partition and its
// "seq" header to increase with offset, in the order rs were consumed.
func checkPerKeyOrder(t *testing.T, rs []*kgo.Record) {
	t.Helper()
	type state struct {
		partition int32
		lastSeq   int
		lastOff   int64
	}
	keys := make(map[string]*state)
	for _, r := range rs {
		seq := -1
		for _, h := range r.Headers {
			if h.Key == "seq" {
				seq, _ = strconv.Atoi(string(h.Value))
			}
		}
		st, ok := keys[string(r.Key)]
		if !ok {
			if seq != 0 {
				t.Errorf("key %q: first consumed record has seq %d, want 0 (%s)", r.Key, seq, describe(r))
			}
			keys[string(r.Key)] = &state{r.Partition, seq, r.Offset}
			continue
		}
		if r.Partition != st.partition {
			t.Errorf("key %q on partitions %d and %d", r.Key, st.partition, r.Partition)
		}
		if seq != st.lastSeq+1 || r.Offset <= st.lastOff {
			t.Errorf("key %q: seq %d at offset %d follows seq %d at offset %d", r.Key, seq, r.Offset, st.lastSeq, st.lastOff)
		}
		st.lastSeq, st.lastOff = seq, r.Offset
	}
}
