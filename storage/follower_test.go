package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// leaderLog fills a replicated leader log with plain, idempotent,
// transactional and control batches over several small segments, setting
// leader epochs 1, 1, 2, ... and returns it.
func leaderLog(t *testing.T, dir string) *Log {
	t.Helper()
	cfg := replicatedConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	l := openLog(t, dir, cfg)
	epoch := int32(1)
	app := func(b []byte) {
		t.Helper()
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: epoch, LogAppendTime: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 6; i++ {
		app(simpleBatch(1+i%3, 30, 1000+int64(i)))
		app(pbatch(1, 0, int32(2*i), 2))
	}
	epoch = 3
	app(txnBatch(2, 0, 0, "t0", "t1"))
	app(simpleBatch(2, 20, 2000))
	if _, err := l.AppendMarker(pid(2), 0, false, 0, epoch); err != nil {
		t.Fatal(err)
	}
	app(txnBatch(2, 0, 2, "t2"))
	epoch = 4
	app(simpleBatch(3, 50, 3000))
	return l
}

// segmentBytes returns the .log files of dir by name.
func segmentBytes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == logSuffix {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = b
		}
	}
	return out
}

// replicate copies the leader's log into the follower as a replica fetcher
// would, in fetches of at most maxBytes (ending in partial batches).
func replicate(t *testing.T, leader, follower *Log, maxBytes int32) {
	t.Helper()
	for follower.LogEndOffset() < leader.LogEndOffset() {
		res, err := leader.ReadForFollower(follower.LogEndOffset(), maxBytes, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := res.Slice.ReadAll()
		res.Slice.Release()
		if err != nil {
			t.Fatal(err)
		}
		before := follower.LogEndOffset()
		fr, err := follower.AppendAsFollower(b)
		if err != nil {
			t.Fatalf("AppendAsFollower at %d: %v", before, err)
		}
		if fr.Count == 0 || fr.FirstOffset != before || fr.LastOffset != follower.LogEndOffset()-1 {
			t.Fatalf("AppendAsFollower at %d: %+v, leo now %d", before, fr, follower.LogEndOffset())
		}
	}
}

func TestLog_AppendAsFollowerKeepsOffsets(t *testing.T) {
	root := t.TempDir()
	leader := leaderLog(t, filepath.Join(root, "leader", "t-0"))
	defer leader.Close()
	fcfg := replicatedConfig()
	fcfg.SegmentBytes = 600
	fcfg.IndexIntervalBytes = 100
	fdir := filepath.Join(root, "follower", "t-0")
	follower := openLog(t, fdir, fcfg)
	defer follower.Close()
	replicate(t, leader, follower, 250)

	if follower.LogEndOffset() != leader.LogEndOffset() || follower.HighWatermark() != 0 {
		t.Fatalf("follower leo %d hw %d, leader leo %d", follower.LogEndOffset(), follower.HighWatermark(), leader.LogEndOffset())
	}
	want, got := segmentBytes(t, leader.Dir()), segmentBytes(t, fdir)
	if len(want) < 3 || len(got) != len(want) {
		t.Fatalf("follower has %d segments, leader %d", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Fatalf("segment %s differs: %d bytes, leader %d", name, len(got[name]), len(b))
		}
	}
	if g, w := follower.ProducerStates(), leader.ProducerStates(); !slices.Equal(g, w) {
		t.Fatalf("producer states\n got %+v\nwant %+v", g, w)
	}
	hw := leader.LogEndOffset()
	if g, w := follower.AbortedTransactions(0, hw), leader.AbortedTransactions(0, hw); len(w) != 1 || !slices.Equal(g, w) {
		t.Fatalf("aborted transactions %+v, leader %+v", g, w)
	}
	for _, l := range []*Log{leader, follower} {
		if err := l.SetHighWatermark(hw); err != nil {
			t.Fatal(err)
		}
	}
	if g, w := follower.LastStableOffset(), leader.LastStableOffset(); g != w || g >= hw {
		t.Fatalf("LSO %d, leader %d (a transaction is open)", g, w)
	}
	if g, w := readLog(t, follower), readLog(t, leader); !slices.EqualFunc(g, w, bytes.Equal) {
		t.Fatal("follower reads differ from the leader's")
	}
	// Reopened, the follower has the same state.
	follower.Close()
	follower = openLog(t, fdir, fcfg)
	if g, w := follower.ProducerStates(), leader.ProducerStates(); !slices.Equal(g, w) {
		t.Fatalf("after reopen: producer states\n got %+v\nwant %+v", g, w)
	}
}

func TestLog_AppendAsFollowerRejects(t *testing.T) {
	root := t.TempDir()
	leader := leaderLog(t, filepath.Join(root, "leader", "t-0"))
	defer leader.Close()
	all := readFollower(t, leader, 0)
	follower := openLog(t, filepath.Join(root, "follower", "t-0"), replicatedConfig())
	defer follower.Close()

	h0, _ := ParseBatchHeader(all)
	second := all[h0.Size():]
	bad := slices.Clone(all)
	bad[h0.Size()+BatchHeaderSize+3] ^= 1 // second batch's records
	if _, err := follower.AppendAsFollower(bad); !errors.Is(err, ErrCorruptBatch) || follower.LogEndOffset() != 0 {
		t.Fatalf("corrupt second batch: %v, leo %d", err, follower.LogEndOffset())
	}
	h1, _ := ParseBatchHeader(second)
	backwards := slices.Clone(second[:h1.Size()])
	backwards = append(backwards, all[:h0.Size()]...) // second batch, then the first
	if _, err := follower.AppendAsFollower(backwards); !errors.Is(err, ErrOffsetMismatch) || follower.LogEndOffset() != 0 {
		t.Fatalf("offsets going back: %v, leo %d", err, follower.LogEndOffset())
	}
	// Nothing, or only a partial batch: nothing appended, no error.
	for _, b := range [][]byte{nil, all[:5], all[:h0.Size()-1]} {
		if res, err := follower.AppendAsFollower(b); err != nil || res.Count != 0 || res.FirstOffset != -1 {
			t.Fatalf("partial input of %d bytes: %+v %v", len(b), res, err)
		}
	}
	res, err := follower.AppendAsFollower(all[:h0.Size()+10])
	if err != nil || res.Count != 1 || res.FirstOffset != 0 || res.LastOffset != h0.LastOffset() || res.Bytes != h0.Size() {
		t.Fatalf("one batch and a partial one: %+v %v", res, err)
	}
	if _, err := follower.AppendAsFollower(all[:h0.Size()]); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("same batch again: %v", err)
	}
}

// TestLog_AppendAsFollowerAcceptsCompactedGaps: a leader whose log the
// cleaner compacted sends batches with gaps between them and batches with
// fewer records than offsets; the follower keeps them as they are, offsets
// included, as Kafka's follower does.
func TestLog_AppendAsFollowerAcceptsCompactedGaps(t *testing.T) {
	root := t.TempDir()
	leader := leaderLog(t, filepath.Join(root, "leader", "t-0"))
	defer leader.Close()
	all := readFollower(t, leader, 0)
	h0, _ := ParseBatchHeader(all)
	second := all[h0.Size():]
	h1, _ := ParseBatchHeader(second)
	third := second[h1.Size():]
	h2, _ := ParseBatchHeader(third)

	follower := openLog(t, filepath.Join(root, "follower", "t-0"), replicatedConfig())
	defer follower.Close()
	gap := slices.Clone(all[:h0.Size()])
	gap = append(gap, third[:h2.Size()]...) // first and third batches
	res, err := follower.AppendAsFollower(gap)
	if err != nil || res.Count != 2 || follower.LogEndOffset() != h2.LastOffset()+1 {
		t.Fatalf("gap between batches: %+v %v, leo %d, want %d", res, err, follower.LogEndOffset(), h2.LastOffset()+1)
	}
	// A batch past the log end (the ones between were compacted away).
	late := openLog(t, filepath.Join(root, "late", "t-0"), replicatedConfig())
	defer late.Close()
	if _, err := late.AppendAsFollower(second[:h1.Size()]); err != nil || late.LogEndOffset() != h1.LastOffset()+1 {
		t.Fatalf("batch past the log end: %v, leo %d", err, late.LogEndOffset())
	}
}

// TestLog_FollowerCopiesACleanedLog: a follower that catches up from a
// leader whose log the cleaner has compacted (a batch with one record left
// of three offsets, merged segments) ends with the leader's offsets and
// records, and the leader's bytes.
func TestLog_FollowerCopiesACleanedLog(t *testing.T) {
	root := t.TempDir()
	leader := openLog(t, filepath.Join(root, "leader", "t-0"), replicatedConfig())
	defer leader.Close()
	kv := func(k, v string) rec { return rec{key: []byte(k), value: []byte(v), ts: 1000} }
	roll := func() {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		if _, err := leader.rollLocked(); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(t, leader, makeBatch(batchOpts{}, kv("k0", "a"), kv("k1", "a"), kv("k2", "a"))) // 0-2
	roll()
	mustAppend(t, leader, makeBatch(batchOpts{}, kv("k0", "b"))) // 3
	mustAppend(t, leader, makeBatch(batchOpts{}, kv("k1", "b"))) // 4
	roll()
	mustAppend(t, leader, makeBatch(batchOpts{}, kv("k9", "x"))) // 5, active
	if err := leader.SetHighWatermark(leader.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Clean(CleanOptions{Map: NewOffsetMap(1<<12, 0)}); err != nil {
		t.Fatal(err)
	}
	cleaned := readLog(t, leader)
	h, _ := ParseBatchHeader(cleaned[0])
	if h.BaseOffset != 0 || h.RecordCount != 1 || h.LastOffsetDelta != 2 {
		t.Fatalf("first batch after cleaning: base %d, %d records, lastOffsetDelta %d; want 0, 1, 2", h.BaseOffset, h.RecordCount, h.LastOffsetDelta)
	}

	follower := openLog(t, filepath.Join(root, "follower", "t-0"), replicatedConfig())
	defer follower.Close()
	for follower.LogEndOffset() < leader.LogEndOffset() {
		if _, err := follower.AppendAsFollower(readFollower(t, leader, follower.LogEndOffset())); err != nil {
			t.Fatalf("follower at %d: %v", follower.LogEndOffset(), err)
		}
	}
	if err := follower.SetHighWatermark(leader.HighWatermark()); err != nil {
		t.Fatal(err)
	}
	if g, w := readLog(t, follower), cleaned; !slices.EqualFunc(g, w, bytes.Equal) {
		t.Fatalf("follower has %d batches, the cleaned leader %d, or their bytes differ", len(g), len(w))
	}
	if g, w := follower.LogEndOffset(), leader.LogEndOffset(); g != w || g != 6 {
		t.Fatalf("follower log end %d, leader %d, want 6", g, w)
	}
}

func TestLog_FollowerDeduplicatesAfterBecomingLeader(t *testing.T) {
	root := t.TempDir()
	leader := openLog(t, filepath.Join(root, "leader", "t-0"), replicatedConfig())
	defer leader.Close()
	var sent [][]byte
	for i := 0; i < 3; i++ {
		b := pbatch(7, 2, int32(3*i), 3)
		sent = append(sent, slices.Clone(b))
		if _, err := leader.Append(b, AppendOptions{LeaderEpoch: 5, LogAppendTime: -1}); err != nil {
			t.Fatal(err)
		}
	}
	follower := openLog(t, filepath.Join(root, "follower", "t-0"), testConfig()) // default mode
	defer follower.Close()
	replicate(t, leader, follower, 1<<20)
	if follower.HighWatermark() != 9 {
		t.Fatalf("default-mode follower hw %d, want 9", follower.HighWatermark())
	}
	// The old leader fails; the producer retries its last batch on the new one.
	res, err := follower.Append(slices.Clone(sent[2]), AppendOptions{LeaderEpoch: 6, LogAppendTime: -1})
	if err != nil || !res.Duplicate || res.BaseOffset != 6 || res.LastOffset != 8 {
		t.Fatalf("retried batch on the new leader: %+v %v", res, err)
	}
	res, err = follower.Append(slices.Clone(sent[0]), AppendOptions{LeaderEpoch: 6, LogAppendTime: -1})
	if err != nil || !res.Duplicate || res.BaseOffset != 0 {
		t.Fatalf("retried first batch on the new leader: %+v %v", res, err)
	}
	if _, err := follower.Append(pbatch(7, 2, 10, 1), AppendOptions{LeaderEpoch: 6, LogAppendTime: -1}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence gap on the new leader: %v", err)
	}
	if res, err := follower.Append(pbatch(7, 2, 9, 1), AppendOptions{LeaderEpoch: 6, LogAppendTime: -1}); err != nil || res.BaseOffset != 9 {
		t.Fatalf("next batch on the new leader: %+v %v", res, err)
	}
}
