package broker

// The log cleaner (Kafka's LogCleaner and LogCleanerManager): with
// log.cleaner.enable, log.cleaner.threads goroutines each repeatedly pick the
// dirtiest partition of a compacted topic (cleanup.policy compact or
// compact,delete) whose dirty ratio reaches min.cleanable.dirty.ratio, or
// one holding a dirty record older than max.compaction.lag.ms, and clean it
// (storage.Log.Clean); with nothing to clean a thread sleeps
// log.cleaner.backoff.ms. Each thread owns an OffsetMap of
// log.cleaner.dedupe.buffer.size / log.cleaner.threads bytes, allocated at
// its first clean; the threads share an I/O budget of
// log.cleaner.io.max.bytes.per.second.

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/storage"
)

// cleanerState is the cleaner threads' shared state.
type cleanerState struct {
	mu                            sync.Mutex
	busy                          map[*partition]bool
	lastCleanMs                   map[*partition]int64
	bytesRead, bytesWritten, runs int64
	throttle                      *throttler
}

// isCompacted reports whether cleanup.policy includes compact.
func isCompacted(policy string) bool { return slices.Contains(config.SplitList(policy), "compact") }

// startCleaner starts the cleaner threads.
func (b *Broker) startCleaner() {
	if !b.cfg.boolProp("log.cleaner.enable") {
		return
	}
	threads := max(1, int(b.cfg.int64Prop("log.cleaner.threads")))
	rate, _ := strconv.ParseFloat(b.cfg.stringProp("log.cleaner.io.max.bytes.per.second"), 64)
	b.cleaner.mu.Lock() // the metrics read it
	b.cleaner.throttle = newThrottler(rate)
	b.cleaner.mu.Unlock()
	buffer := b.cfg.int64Prop("log.cleaner.dedupe.buffer.size") / int64(threads)
	loadFactor, _ := strconv.ParseFloat(b.cfg.stringProp("log.cleaner.io.buffer.load.factor"), 64)
	backoff := time.Duration(max(1, b.cfg.int64Prop("log.cleaner.backoff.ms"))) * time.Millisecond
	for i := 0; i < threads; i++ {
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			var m *storage.OffsetMap
			for {
				p, ok := b.pickCleanable()
				if ok {
					if m == nil {
						m = storage.NewOffsetMap(min(buffer, math.MaxInt32), loadFactor)
					}
					b.cleanPartition(p, m)
					continue
				}
				select {
				case <-b.ctx.Done():
					return
				case <-time.After(backoff):
				}
			}
		}()
	}
}

// pickCleanable returns the dirtiest compacted partition that needs
// cleaning and marks it busy.
func (b *Broker) pickCleanable() (*partition, bool) {
	if b.ctx.Err() != nil {
		return nil, false
	}
	var best *partition
	bestRatio := -1.0
	c := &b.cleaner
	for _, p := range b.allPartitions() {
		configs, _ := b.topicSnapshot(p.topic)
		if policy, _ := b.topicConfigValue(configs, "cleanup.policy"); !isCompacted(policy) {
			continue
		}
		c.mu.Lock()
		busy := c.busy[p]
		c.mu.Unlock()
		if busy {
			continue
		}
		minRatio, _ := strconv.ParseFloat(b.topicValue(configs, "min.cleanable.dirty.ratio"), 64)
		st := p.log.Cleanable(b.topicInt(configs, "min.compaction.lag.ms"), b.topicInt(configs, "max.compaction.lag.ms"))
		if st.DirtyBytes == 0 || (st.DirtyRatio < minRatio && !st.Overdue) {
			continue
		}
		ratio := st.DirtyRatio
		if st.Overdue {
			ratio += 1 // overdue logs first
		}
		if ratio > bestRatio {
			best, bestRatio = p, ratio
		}
	}
	if best == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy == nil {
		c.busy = map[*partition]bool{}
	}
	if c.busy[best] {
		return nil, false
	}
	c.busy[best] = true
	return best, true
}

// topicValue is a topic config's effective value.
func (b *Broker) topicValue(configs map[string]string, name string) string {
	v, _ := b.topicConfigValue(configs, name)
	return v
}

// cleanPartition cleans p's log with m.
func (b *Broker) cleanPartition(p *partition, m *storage.OffsetMap) {
	c := &b.cleaner
	defer func() {
		c.mu.Lock()
		delete(c.busy, p)
		c.mu.Unlock()
	}()
	configs, _ := b.topicSnapshot(p.topic)
	stats, err := p.log.Clean(storage.CleanOptions{
		Map:                m,
		MinCompactionLagMs: b.topicInt(configs, "min.compaction.lag.ms"),
		DeleteRetentionMs:  b.topicInt(configs, "delete.retention.ms"),
		Compress:           compress,
		Throttle:           c.throttle.wait,
	})
	c.mu.Lock()
	c.bytesRead += stats.BytesRead
	c.bytesWritten += stats.BytesWritten
	c.runs++
	if err == nil {
		if c.lastCleanMs == nil {
			c.lastCleanMs = map[*partition]int64{}
		}
		c.lastCleanMs[p] = b.cfg.Now().UnixMilli()
	}
	c.mu.Unlock()
	switch {
	case err == nil:
		mb := float64(stats.BytesRead) / (1 << 20)
		b.log.Info("cleaned log", "topic", p.topic.name, "partition", p.index, "passes", stats.Passes,
			"segments", stats.SegmentsCleaned, "read_mb", round2(mb), "written_mb", round2(float64(stats.BytesWritten)/(1<<20)),
			"records", stats.RecordsRead, "kept", stats.RecordsKept, "first_dirty_offset", stats.EndOffset,
			"took", stats.Elapsed.Round(time.Millisecond), "mb_per_s", round2(mb/max(stats.Elapsed.Seconds(), 1e-9)))
	case errors.Is(err, storage.ErrLogClosed), errors.Is(err, storage.ErrCleanAborted):
	default:
		b.log.Error("cleaning log", "topic", p.topic.name, "partition", p.index, "err", err)
	}
}

// cleanerStats returns the cleaner's counters and p's last clean time (-1
// when never cleaned since start).
func (b *Broker) cleanerStats(p *partition) (bytesRead, bytesWritten, lastCleanMs int64) {
	c := &b.cleaner
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.lastCleanMs[p]
	if !ok {
		last = -1
	}
	return c.bytesRead, c.bytesWritten, last
}

// throttler limits the cleaner's I/O to a rate in bytes per second (Kafka's
// Throttler): it sleeps when the bytes counted since the start of the
// current one-second window exceed the rate.
type throttler struct {
	mu    sync.Mutex
	rate  float64
	start time.Time
	bytes float64
	slept time.Duration // in total, for gregor_cleaner_throttle_seconds_total
}

func newThrottler(rate float64) *throttler {
	return &throttler{rate: rate, start: time.Now()}
}

// throttled returns the time wait has slept in total.
func (t *throttler) throttled() time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slept
}

func (t *throttler) wait(n int64) {
	if t == nil || t.rate <= 0 || math.IsInf(t.rate, 1) || t.rate >= math.MaxFloat64/2 {
		return
	}
	t.mu.Lock()
	t.bytes += float64(n)
	elapsed := time.Since(t.start)
	want := time.Duration(t.bytes / t.rate * float64(time.Second))
	var sleep time.Duration
	if want > elapsed {
		sleep = want - elapsed
	}
	if elapsed > time.Second {
		t.start, t.bytes = time.Now(), 0
	}
	t.slept += sleep
	t.mu.Unlock()
	if sleep > 0 {
		time.Sleep(sleep)
	}
}

// round2 rounds a figure for a log line to two decimals: 0.48 MB, not
// 0.4812345678.
func round2(f float64) float64 { return math.Round(f*100) / 100 }
