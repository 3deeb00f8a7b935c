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
//
// These settings are dynamic broker configs, as in Kafka (LogCleaner's
// reconfigurable configs): when their effective values change, the threads
// are told to stop (each after the clean it is running) and a new set is
// started with the new values (reconfigureCleaner). A change of
// log.cleaner.threads is refused beyond half or double the current count,
// as Kafka refuses it.

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
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

	// run serialises starting and restarting the threads; settings are
	// those the running threads were started with, stop closes to end them.
	run      sync.Mutex
	settings cleanerSettings
	stop     chan struct{}
}

// cleanerSettings are the cleaner's dynamic broker configs, as read at a
// (re)start of its threads.
type cleanerSettings struct {
	threads    int
	buffer     int64
	loadFactor float64
	rate       float64
	backoff    time.Duration
}

// cleanerConfigs are the broker configs the cleaner threads are started
// with; changing one dynamically restarts them.
var cleanerConfigs = []string{"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms"}

// cleanerSettingsNow reads the cleaner's configs, dynamic values first.
func (b *Broker) cleanerSettingsNow() cleanerSettings {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(b.brokerValueString(name)), 10, 64)
		return n
	}
	float := func(name string) float64 {
		f, _ := strconv.ParseFloat(strings.TrimSpace(b.brokerValueString(name)), 64)
		return f
	}
	s := cleanerSettings{
		threads:    max(1, int(num("log.cleaner.threads"))),
		loadFactor: float("log.cleaner.io.buffer.load.factor"),
		rate:       float("log.cleaner.io.max.bytes.per.second"),
		backoff:    time.Duration(max(1, num("log.cleaner.backoff.ms"))) * time.Millisecond,
	}
	s.buffer = num("log.cleaner.dedupe.buffer.size") / int64(s.threads)
	return s
}

// isCompacted reports whether cleanup.policy includes compact.
func isCompacted(policy string) bool { return slices.Contains(config.SplitList(policy), "compact") }

// startCleaner starts the cleaner threads.
func (b *Broker) startCleaner() {
	if !b.cfg.boolProp("log.cleaner.enable") {
		return
	}
	b.cleaner.run.Lock()
	defer b.cleaner.run.Unlock()
	b.startCleanerThreadsLocked(b.cleanerSettingsNow())
}

// reconfigureCleaner restarts the cleaner threads when the effective
// values of their configs changed (after a dynamic broker config change).
func (b *Broker) reconfigureCleaner() {
	if !b.cfg.boolProp("log.cleaner.enable") {
		return
	}
	b.cleaner.run.Lock()
	defer b.cleaner.run.Unlock()
	s := b.cleanerSettingsNow()
	if b.cleaner.stop == nil || s == b.cleaner.settings {
		return
	}
	close(b.cleaner.stop)
	b.log.Info("restarting the log cleaner with new settings", "threads", s.threads, "dedupeBufferPerThread", s.buffer, "ioMaxBytesPerSecond", s.rate, "backoff", s.backoff)
	b.startCleanerThreadsLocked(s)
}

// cleanerThreads is the number of cleaner threads started last.
func (b *Broker) cleanerThreads() int {
	b.cleaner.run.Lock()
	defer b.cleaner.run.Unlock()
	return b.cleaner.settings.threads
}

// startCleanerThreadsLocked starts s.threads cleaner threads, which end when
// the broker closes or b.cleaner.stop is closed. b.cleaner.run should be
// held.
func (b *Broker) startCleanerThreadsLocked(s cleanerSettings) {
	b.cleaner.mu.Lock() // the metrics read it
	b.cleaner.throttle = newThrottler(s.rate)
	b.cleaner.mu.Unlock()
	stop := make(chan struct{})
	b.cleaner.settings, b.cleaner.stop = s, stop
	for i := 0; i < s.threads; i++ {
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			var m *storage.OffsetMap
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, ok := b.pickCleanable()
				if ok {
					if m == nil {
						m = storage.NewOffsetMap(min(s.buffer, math.MaxInt32), s.loadFactor)
					}
					b.cleanPartition(p, m)
					continue
				}
				select {
				case <-b.ctx.Done():
					return
				case <-stop:
					return
				case <-time.After(s.backoff):
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
