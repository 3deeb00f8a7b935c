package broker

// The coordinators' internal topics: __consumer_offsets (offsets_topic.go),
// __transaction_state (txn_topic.go) and __share_group_state
// (share_state_topic.go). Each is created on first use, on a single node
// too, with its coordinator's configs for the number of partitions, the
// replication factor (capped at the live brokers) and, but for
// __consumer_offsets, min.insync.replicas; internal and compacted, with
// retention -1. Its coordinator loads the partitions this broker leads and
// unloads those it stops leading.

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// isInternalTopic reports the topics Metadata marks internal.
func isInternalTopic(name string) bool {
	return name == offsetsTopicName || name == txnStateTopicName || name == shareStateTopicName
}

// internalTopicConfigs are the configs of the coordinators' topics.
func internalTopicConfigs() map[string]string {
	return map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1"}
}

// partitionLoader is a coordinator that serves the partitions of its
// internal topic that it has loaded.
type partitionLoader interface {
	LoadPartition(pi int32) error
	UnloadPartition(pi int32)
}

// internalTopic is a coordinator's internal topic and this broker's part
// in loading its partitions.
type internalTopic struct {
	b              *Broker
	name           string
	partitionsKey  string // config: number of partitions
	replicationKey string // config: replication factor
	minISRKey      string // config: min.insync.replicas of the topic; "" for none
	coordinator    string // in log messages: "group coordinator"
	// coord returns the coordinator, nil until it is open.
	coord func() partitionLoader
	// unloadInline: sync unloads at once with mu held, rather than after
	// the partition's load in progress, as apply does.
	unloadInline bool

	createMu sync.Mutex  // one creation at a time
	ready    atomic.Bool // single node: the topic exists and its partitions were loaded

	mu     sync.Mutex
	loaded map[int32]int32       // partition → leader epoch it is (being) loaded for
	loadMu map[int32]*sync.Mutex // one load of a partition at a time
}

// minISR is the topic's min ISR config capped at its replication factor;
// 1 without the topic or the config.
func (it *internalTopic) minISR() int {
	t := it.b.lookupTopic(it.name)
	if t == nil || it.minISRKey == "" {
		return 1
	}
	minISR := int(it.b.cfg.int64Prop(it.minISRKey))
	if parts := it.b.partitionsOf(t); len(parts) > 0 {
		if mp := parts[0].meta.Load(); mp != nil && len(mp.Replicas) < minISR {
			minISR = len(mp.Replicas)
		}
	}
	return max(minISR, 1)
}

// ensure returns the topic, creating it if needed; nil if it cannot be
// created now. On a single node its partitions are loaded before it is
// returned, so before anyone is told of the coordinator.
func (it *internalTopic) ensure() *topic {
	b := it.b
	if t := b.lookupTopic(it.name); t != nil && (b.cluster != nil || it.ready.Load()) {
		return t
	}
	it.createMu.Lock()
	defer it.createMu.Unlock()
	if t := b.lookupTopic(it.name); t != nil {
		if b.cluster == nil && !it.ready.Load() {
			it.sync()
			it.ready.Store(true)
		}
		return t
	}
	n := int32(b.cfg.int64Prop(it.partitionsKey))
	rf := int16(1)
	if b.cluster != nil {
		rf = int16(b.cfg.int64Prop(it.replicationKey))
		if brokers, _ := b.brokersView(); len(brokers) < int(rf) {
			rf = int16(len(brokers))
		}
		if rf < 1 {
			return nil
		}
	}
	configs := internalTopicConfigs()
	if it.minISRKey != "" {
		configs["min.insync.replicas"] = strconv.Itoa(min(int(b.cfg.int64Prop(it.minISRKey)), int(rf)))
	}
	t, err := b.createTopicAssigned(it.name, n, rf, nil, configs)
	if err != nil {
		if t = b.lookupTopic(it.name); t == nil {
			b.log.Warn("creating "+it.name, "err", err)
			return nil
		}
	}
	if b.cluster == nil {
		it.sync()
		it.ready.Store(true)
	}
	return t
}

// sync loads the partitions this broker has become leader of and unloads
// those it no longer leads. It runs after every applied metadata change
// and when the topic is created on a single node. In a cluster both run
// in the background, one at a time per partition: a load waits for the
// previous leader's records to commit.
func (it *internalTopic) sync() {
	b := it.b
	t := b.lookupTopic(it.name)
	if t == nil {
		return
	}
	coord := it.coord()
	if coord == nil {
		return
	}
	type change struct {
		pi, epoch int32
		load      bool
	}
	var changes []change
	inlineUnloads := 0
	it.mu.Lock()
	if it.loaded == nil {
		it.loaded = map[int32]int32{}
		it.loadMu = map[int32]*sync.Mutex{}
	}
	for _, p := range b.partitionsOf(t) {
		if it.loadMu[p.index] == nil {
			it.loadMu[p.index] = &sync.Mutex{}
		}
		leads, epoch := b.leadsGroupPartition(p)
		cur, ok := it.loaded[p.index]
		switch {
		case leads && (!ok || cur != epoch):
			// A new epoch's load drops the old epoch's state itself
			// (apply), in the same goroutine: a separate unload could run
			// after it and drop what it loaded.
			if ok && it.unloadInline {
				coord.UnloadPartition(p.index)
			}
			it.loaded[p.index] = epoch
			changes = append(changes, change{p.index, epoch, true})
		case !leads && ok:
			delete(it.loaded, p.index)
			if it.unloadInline {
				coord.UnloadPartition(p.index)
				b.log.Debug("unloaded "+it.coordinator+" partition", "partition", p.index)
				inlineUnloads++
			} else {
				changes = append(changes, change{p.index, cur, false})
			}
		}
	}
	it.mu.Unlock()
	if inlineUnloads > 0 {
		b.log.Info("unloaded "+it.coordinator+" partitions", "partitions", inlineUnloads)
	}
	if len(changes) == 0 {
		return
	}
	// One line for the changes of this pass, once they are all done: a
	// start or a leadership move loads tens of partitions at once.
	run := func(parallel bool) {
		start := time.Now()
		var loads, unloads atomic.Int32
		var wg sync.WaitGroup
		for _, c := range changes {
			one := func() {
				if it.apply(coord, c.pi, c.epoch, c.load) {
					if c.load {
						loads.Add(1)
					} else {
						unloads.Add(1)
					}
				}
			}
			if !parallel {
				one()
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); one() }()
		}
		wg.Wait()
		if n := loads.Load(); n > 0 {
			b.log.Info("loaded "+it.coordinator+" partitions", "partitions", n, "took", time.Since(start).Round(time.Millisecond))
		}
		if n := unloads.Load(); n > 0 {
			b.log.Info("unloaded "+it.coordinator+" partitions", "partitions", n)
		}
	}
	if b.cluster == nil {
		run(false) // quick: no replicas to wait for
	} else {
		go run(true)
	}
}

// apply unloads partition pi, or loads it while this broker leads it in
// epoch, retrying failed loads. A load first drops whatever state an
// earlier epoch left (a coordinator's LoadPartition keeps a partition
// already loaded as it is), so it always starts from the log; an unload
// that finds the partition led again leaves it to that load, which may
// have run already. It reports whether it loaded or unloaded pi.
func (it *internalTopic) apply(coord partitionLoader, pi, epoch int32, load bool) bool {
	b := it.b
	it.mu.Lock()
	mu := it.loadMu[pi]
	it.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if !load {
		it.mu.Lock()
		_, ledAgain := it.loaded[pi]
		it.mu.Unlock()
		if ledAgain {
			return false
		}
		coord.UnloadPartition(pi)
		b.log.Debug("unloaded "+it.coordinator+" partition", "partition", pi)
		return true
	}
	coord.UnloadPartition(pi)
	for attempt := 0; ; attempt++ {
		it.mu.Lock()
		cur, ok := it.loaded[pi]
		it.mu.Unlock()
		if !ok || cur != epoch || b.ctx.Err() != nil {
			return false
		}
		start := time.Now()
		err := coord.LoadPartition(pi)
		if err == nil {
			b.log.Debug("loaded "+it.coordinator+" partition", "partition", pi, "leader_epoch", epoch, "took", time.Since(start))
			return true
		}
		b.log.Warn("loading "+it.coordinator+" partition", "partition", pi, "err", err, "attempt", attempt)
		select {
		case <-b.ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}
